import { AgentCard, TaskState } from '@a2a-js/sdk';
import type { Part } from '@a2a-js/sdk';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { buildProblem } from '../../common/errors/problem-details';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import type { RequestRecord } from '../../state/state.entities';
import { agentCardJson, agentCardOf } from './a2a-card.util';
import { rpcErrorOf } from './a2a-errors.util';
import { A2aEventMapper } from './a2a-events.util';
import { decisionOf, itemsOf, stateOf, taskOf } from './a2a-mapping.util';

const part = (content: Part['content'], mediaType = ''): Part => ({ content, metadata: undefined, filename: '', mediaType });
const AGENT = { prefix: '/Guard/1' };

function record(o: Partial<RequestRecord>): RequestRecord {
  return {
    requestId: 'r1',
    taskId: 't1',
    sessionId: 's1',
    tenantId: 'tn',
    ownerId: 'o',
    seq: 0,
    status: 'Completed',
    messages: [
      { id: 'm1', role: 'user', items: [{ content_type: 'text', content: 'hi' }], created_at: '2026-01-01T00:00:00Z' },
      { id: 'm2', role: 'assistant', content: 'hello', created_at: '2026-01-01T00:00:01Z' },
    ],
    toolCalls: [],
    tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
    output: 'hello',
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:01Z',
    ...o,
  } as RequestRecord;
}

describe('A2A mapping', () => {
  it('parts → items: text, data as JSON text, image bytes and data: URLs; other files refused naming the part', () => {
    expect(
      itemsOf([
        part({ $case: 'text', value: 'a' }),
        part({ $case: 'data', value: { k: 1 } }),
        part({ $case: 'raw', value: Buffer.from('png') }, 'image/png'),
        part({ $case: 'url', value: 'data:image/gif;base64,R0lG' }),
      ]),
    ).toEqual([
      { content_type: 'text', content: 'a' },
      { content_type: 'text', content: '{"k":1}' },
      { content_type: 'image', content: 'data:image/png;base64,cG5n' },
      { content_type: 'image', content: 'data:image/gif;base64,R0lG' },
    ]);
    expect(() => itemsOf([part({ $case: 'raw', value: Buffer.from('%PDF') }, 'application/pdf')])).toThrow(/message.parts.0/);
    expect(() => itemsOf([part({ $case: 'url', value: 'https://example.com/a.png' })])).toThrow(/fetches nothing/);
    expect(() => itemsOf([])).toThrow(/at least one part/);
  });

  it('a decision is the data part {decision, pause_id, reason?}; anything else is no decision, a malformed one 422', () => {
    expect(decisionOf([part({ $case: 'text', value: 'yes' }), part({ $case: 'data', value: { decision: 'reject', pause_id: 'p', reason: 'no' } })])).toEqual({
      action: 'reject',
      pause_id: 'p',
      reason: 'no',
    });
    expect(decisionOf([part({ $case: 'data', value: { other: 1 } })])).toBeUndefined();
    expect(() => decisionOf([part({ $case: 'data', value: { decision: 'maybe', pause_id: 'p' } })])).toThrow(/decision/);
    expect(() => decisionOf([part({ $case: 'data', value: { decision: 'approve' } })])).toThrow(/pause_id/);
  });

  it('a request is a task of its context: states, history, the output artifact, our ids in metadata', () => {
    expect([stateOf('Queued'), stateOf('Running'), stateOf('Paused'), stateOf('Completed'), stateOf('Canceled'), stateOf('Failed')]).toEqual([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_INPUT_REQUIRED,
      TaskState.TASK_STATE_COMPLETED,
      TaskState.TASK_STATE_CANCELED,
      TaskState.TASK_STATE_FAILED,
    ]);
    const task = taskOf(AGENT, record({}));
    expect(task).toMatchObject({ id: 'r1', contextId: 't1', metadata: { task_id: 't1', session_id: 's1', request_id: 'r1' } });
    expect(task.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'text', value: 'hello' });
    expect(task.history.map((m) => m.parts[0]!.content)).toEqual([
      { $case: 'text', value: 'hi' },
      { $case: 'text', value: 'hello' },
    ]);
    expect(taskOf(AGENT, record({}), 1).history).toHaveLength(1);
    const failed = taskOf(AGENT, record({ status: 'Failed', output: undefined, error: { code: 'LLM_TIMEOUT', message: 'slow' } }));
    expect(failed.status).toMatchObject({ state: TaskState.TASK_STATE_FAILED, message: { metadata: { code: 'LLM_TIMEOUT' } } });
    expect(failed.artifacts).toEqual([]);
  });

  it('a paused request is input-required with the pause as a data part: pause id, pending calls with their risk, how to answer', () => {
    const pendingApprovals = {
      pauseId: 'p1',
      calls: [{ id: 'c1', name: 'Notes-wipe', arguments: '{}', risk: 'write_high_risk' }],
      pending: ['c1'],
      plan: false,
      requestedAt: '2026-01-01T00:00:00Z',
    };
    const status = taskOf(AGENT, record({ status: 'Paused', pendingApprovals } as Partial<RequestRecord>)).status!;
    expect(status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const data = status.message!.parts[1]!.content;
    expect(data?.$case === 'data' && data.value).toMatchObject({
      pause_id: 'p1',
      tool_calls: [{ id: 'c1', name: 'Notes-wipe', risk: 'write_high_risk' }],
      approval_url: '/Guard/1/tealagents/v1alpha1/resume/r1?action=approve&pause_id=p1',
      reply_with: { pause_id: 'p1' },
    });
  });

  it('stream events: chunks appended to the output artifact, the outcome as the final status', () => {
    const mapper = new A2aEventMapper({ contextId: 't1', taskId: 'r1', metadata: {} });
    const [first] = mapper.map({ event: 'partial-response', data: { output_partial: 'he' } });
    const [second] = mapper.map({ event: 'partial-response', data: { output_partial: 'llo' } });
    expect(first!.payload?.$case === 'artifactUpdate' && first!.payload.value.append).toBe(false);
    expect(second!.payload?.$case === 'artifactUpdate' && second!.payload.value.append).toBe(true);
    const done = mapper.map({ event: 'final-response', data: { status: 'Completed', content: { output: 'hello' } } });
    expect(done.map((e) => e.payload?.$case)).toEqual(['artifactUpdate', 'statusUpdate']);
    const failed = mapper.map({ event: 'error', data: { code: 'LLM_TIMEOUT', detail: 'slow' } })[0]!.payload;
    expect(failed?.$case === 'statusUpdate' && failed.value.status).toMatchObject({
      state: TaskState.TASK_STATE_FAILED,
      message: { metadata: { code: 'LLM_TIMEOUT' } },
    });
    expect(mapper.map({ event: 'approval-required', data: {} })).toEqual([]);
  });

  it("errors: not found (another user's included) says no more; a stale pause is -32000 with our code; 422 is invalid params; 5xx internal", () => {
    const rpc = (code: ErrorCode, extensions: Record<string, string> = {}) => rpcErrorOf(buildProblem(code, 'detail', '/x', { extensions }));
    expect(rpc(ErrorCode.NOT_OWNER)).toEqual({ code: -32001, message: 'Task not found', data: [expect.objectContaining({ reason: 'TASK_NOT_FOUND' })] });
    expect(rpc(ErrorCode.APPROVAL_ALREADY_DECIDED, { task_id: 't' })).toEqual({
      code: -32000,
      message: 'detail',
      data: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'APPROVAL_ALREADY_DECIDED',
          domain: 'teal-agent-server',
          metadata: { status: '409', task_id: 't' },
        },
      ],
    });
    expect(rpc(ErrorCode.TASK_NOT_RUNNING).code).toBe(-32002);
    expect(rpc(ErrorCode.VALIDATION_FAILED).code).toBe(-32602);
    expect(rpc(ErrorCode.LLM_UNAVAILABLE).code).toBe(-32603);
  });

  it('the card: endpoint for v1.0 and v0.3, skills from metadata.skills, image input for multimodal agents, no security in dev mode', () => {
    const agent = {
      name: 'Guard',
      version: '1',
      prefix: '/Guard/1',
      description: 'd',
      inputType: 'BaseMultiModalInput',
      config: { metadata: { description: 'd', skills: [{ id: 's', name: 'S', description: 'does', tags: ['t'] }] } },
    } as unknown as AgentDefinition;
    const card = agentCardOf(agent, { auth: { mode: 'dev' } } as EnvConfig, 'http://h');
    expect(AgentCard.fromJSON(agentCardJson(card) as never)).toEqual(card);
    expect(card.supportedInterfaces.map((i) => `${i.protocolVersion} ${i.url}`)).toEqual(['1.0 http://h/Guard/1/a2a', '0.3 http://h/Guard/1/a2a']);
    expect(card.skills).toEqual([
      { id: 's', name: 'S', description: 'does', tags: ['t'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
    ]);
    expect(card.defaultInputModes).toContain('image/png');
    expect(card.securitySchemes).toEqual({});
    expect(card.securityRequirements).toEqual([]);
  });
});
