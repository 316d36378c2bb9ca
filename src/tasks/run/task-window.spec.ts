import 'reflect-metadata';
import type { AgentSpecConfig } from '../../agents/config/agent.schema';
import { SUMMARY_HEADING } from '../../invocation/history-summary';
import type { LlmMessage } from '../../llm/llm-client.port';
import type { RequestRecord, StoredMessage } from '../../state/state.entities';
import { taskInput } from './task-window';

const at = '2026-01-01T00:00:00.000Z';
let n = 0;
const u = (text: string): StoredMessage => ({ id: `m${++n}`, role: 'user', items: [{ content_type: 'text', content: text }], created_at: at });
const a = (text: string): StoredMessage => ({ id: `m${++n}`, role: 'assistant', content: text, created_at: at });
const req = (seq: number, messages: StoredMessage[], extra: Partial<RequestRecord> = {}): RequestRecord => ({
  requestId: `r${seq}`,
  taskId: 't',
  sessionId: 's',
  tenantId: 'x',
  ownerId: 'o',
  seq,
  status: 'Completed',
  messages,
  toolCalls: [],
  tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
  createdAt: at,
  updatedAt: at,
  ...extra,
});

/** A runner that answers every summarizing call with `S<k>` and records what it was asked. */
function fakeRunner() {
  const asked: LlmMessage[][] = [];
  return {
    asked,
    run: async (_spec: AgentSpecConfig, conversation: LlmMessage[]) => {
      asked.push(conversation);
      return {
        content: `S${asked.length}`,
        toolCalls: [],
        usage: { completion_tokens: 1, prompt_tokens: 2, total_tokens: 3 },
        finishReason: 'stop',
        appended: [],
        toolExecutions: [],
        modelCalls: [],
      };
    },
  };
}

const spec = (strategy: 'drop' | 'summarize') =>
  ({ name: 'd', model: 'gpt-test', max_tool_rounds: 10, history: { max_messages: 3, strategy } }) as AgentSpecConfig;
const earlier = [req(0, [u('one'), a('1')]), req(1, [u('two'), a('2')])];
const current = req(2, [u('three')]);

describe('taskInput', () => {
  it('drop: leaves the turns out, no model call', async () => {
    const runner = fakeRunner();
    const input = await taskInput(runner, spec('drop'), earlier, current);
    expect(runner.asked).toHaveLength(0);
    expect(input.window.omitted).toHaveLength(2);
    expect(input.summarized).toBe(0);
  });

  it('summarize: writes a summary once, then reuses the stored one for the same left-out turns', async () => {
    const runner = fakeRunner();
    const first = await taskInput(runner, spec('summarize'), earlier, current);
    expect(runner.asked).toHaveLength(1);
    expect(first.written).toMatchObject({ text: 'S1', covers: 2 });
    expect(first.usage.total_tokens).toBe(3);
    expect(first.window.messages[0]).toEqual({ role: 'user', content: `${SUMMARY_HEADING}S1` });

    const stored = [earlier[0]!, earlier[1]!, { ...current, historySummary: first.written }];
    // the same turn 1 left out again (a short follow-on after a failed turn 3 would do this): reuse
    const again = await taskInput(runner, spec('summarize'), stored.slice(0, 2).concat([{ ...stored[2]!, status: 'Failed' }]), req(3, [u('three again')]));
    expect(runner.asked).toHaveLength(1);
    expect(again.written).toBeUndefined();
    expect(again.summarized).toBe(2);
  });

  it('summarize: a stored summary of other messages (an edited history) is not reused', async () => {
    const runner = fakeRunner();
    const stale = { text: 'old', covers: 2, digest: 'not-these-messages' };
    const input = await taskInput(runner, spec('summarize'), [earlier[0]!, { ...earlier[1]!, historySummary: stale }], current);
    expect(runner.asked).toHaveLength(1);
    expect(JSON.stringify(runner.asked[0])).not.toContain('old');
    expect(input.written?.text).toBe('S1');
  });
});
