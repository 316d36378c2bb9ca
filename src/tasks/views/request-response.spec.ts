import type { RequestRecord } from '../../state/state.entities';
import { requestRecord } from '../lifecycle/lifecycle.fixtures';
import { toolCallTrace } from '../run/task-history';
import type { ToolExecution } from '../../tools/tool-executor';
import { responseOf } from './request-response';

const agent = { prefix: '/A/1', source: 'A:1' };

function execution(id: string, over: Partial<ToolExecution> = {}): ToolExecution {
  return { id, name: 'P-f', arguments: '{}', started_at: '2026-01-01T00:00:00.000Z', duration_ms: 1, outcome: 'ok', result: 'r', attempts: 1, ...over };
}

describe('responseOf (Completed): extra_data', () => {
  it('is null when no tool call added anything', () => {
    const record = requestRecord(1, 'Completed', { output: 'done', toolCalls: [toolCallTrace(execution('a'))] });
    expect(toolCallTrace(execution('a'))).not.toHaveProperty('extra_data');
    expect(responseOf(agent, record).content).toMatchObject({ output: 'done', extra_data: null });
    expect(responseOf(agent, requestRecord(2, 'Completed')).content).toMatchObject({ extra_data: null });
  });

  it("answers the items of the request's tool calls, in call order, as stored on their traces", () => {
    const traces = [
      execution('a', { extra_data: [{ key: 'k1', value: 'v1' }] }),
      execution('b'),
      execution('c', {
        extra_data: [
          { key: 'k2', value: 'v2' },
          { key: 'k1', value: 'v3' },
        ],
      }),
    ].map(toolCallTrace);
    // Stored as JSON by every backend: the answer read back after a round trip is the same.
    const record = JSON.parse(JSON.stringify(requestRecord(1, 'Completed', { output: 'done', toolCalls: traces }))) as RequestRecord;
    expect(responseOf(agent, record).content).toMatchObject({
      extra_data: {
        items: [
          { key: 'k1', value: 'v1' },
          { key: 'k2', value: 'v2' },
          { key: 'k1', value: 'v3' },
        ],
      },
    });
  });
});
