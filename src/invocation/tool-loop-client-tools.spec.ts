import type { LlmClient, LlmRequest, LlmResult, LlmStreamEvent, LlmToolSpec } from '../llm/llm-client.port';
import { ApprovalPolicy } from '../tools/governance';
import { ToolExecutor } from '../tools/tool-executor';
import type { Tool } from '../tools/tool.port';
import { Toolset } from '../tools/toolset';
import { runToolLoop } from './tool-loop';

/** A scripted model: one result per turn, requests kept. */
class ScriptedModel implements LlmClient {
  readonly requests: LlmRequest[] = [];
  constructor(private readonly turns: Partial<LlmResult>[]) {}
  async complete(request: LlmRequest): Promise<LlmResult> {
    this.requests.push(structuredClone(request));
    const t = this.turns.shift();
    if (!t) throw new Error('no turn scripted');
    return { content: '', toolCalls: [], finishReason: 'stop', usage: { completion_tokens: 1, prompt_tokens: 2, total_tokens: 3 }, ...t };
  }
  // eslint-disable-next-line require-yield
  async *stream(): AsyncIterable<LlmStreamEvent> {
    throw new Error('not used');
  }
}

const ran: string[] = [];
const tool = (name: string, risk: Tool['risk']): Tool => ({
  name,
  description: name,
  parameters: { type: 'object', properties: {} },
  risk,
  source: 'test',
  execute: async () => {
    ran.push(name);
    return `${name} ran`;
  },
});
const toolset = new Toolset([tool('notes-read', 'read_only'), tool('notes-wipe', 'write_high_risk')]);
const executor = new ToolExecutor({ timeoutMs: 1000, maxRetries: 0, retryBaseMs: 1 });
const caller = { principal: { tenantId: 't', ownerId: 'o' } };
const base: LlmRequest = { model: 'm', messages: [{ role: 'user', content: 'go' }] };
const L1: ApprovalPolicy = { autonomy_level: 'L1', plan_threshold: 99 };
const ask: LlmToolSpec = { name: 'ask_user', description: 'Asks in the UI', parameters: { type: 'object', properties: {} } };
const approvals = { policy: L1, canPause: true };

describe('runToolLoop: client-side tools', () => {
  beforeEach(() => (ran.length = 0));

  it('offers them after the agent tools (a clashing name is left out) and pauses a turn that calls one; nothing of the turn runs', async () => {
    const model = new ScriptedModel([
      {
        content: 'Asking.',
        toolCalls: [
          { id: 'r1', name: 'notes-read', arguments: '{}' },
          { id: 'a1', name: 'ask_user', arguments: '{}' },
        ],
      },
    ]);
    const clash: LlmToolSpec = { ...ask, name: 'notes-read', description: 'not this one' };
    const result = await runToolLoop({ client: model, toolset, executor }, base, 10, { caller, approvals, clientTools: [ask, clash] });
    expect(model.requests[0]!.tools!.map((t) => [t.name, t.description])).toEqual([
      ['notes-read', 'notes-read'],
      ['notes-wipe', 'notes-wipe'],
      ['ask_user', 'Asks in the UI'],
    ]);
    expect(result.paused).toMatchObject({ pending: [{ id: 'a1' }], plan: false, reasons: { a1: 'client_tool' }, risks: { r1: 'read_only', a1: 'client' } });
    expect(ran).toEqual([]);
  });

  it('resumes with the caller results: they stand for the client calls, the other calls of the turn run', async () => {
    const model = new ScriptedModel([{ content: 'done' }]);
    const calls = [
      { id: 'r1', name: 'notes-read', arguments: '{}' },
      { id: 'a1', name: 'ask_user', arguments: '{}' },
    ];
    const conversation = { ...base, messages: [...base.messages, { role: 'assistant' as const, content: 'Asking.', tool_calls: calls }] };
    const result = await runToolLoop({ client: model, toolset, executor }, conversation, 10, {
      caller,
      approvals,
      clientTools: [ask],
      resume: { calls, approved: new Set(['r1', 'a1']), provided: { a1: 'blue' } },
    });
    expect(result.content).toBe('done');
    expect(ran).toEqual(['notes-read']);
    expect(result.toolExecutions.map((e) => [e.id, e.outcome, e.result])).toEqual([
      ['r1', 'ok', 'notes-read ran'],
      ['a1', 'ok', 'blue'],
    ]);
  });

  it('a turn that also needs an approval pauses for the approval; its client call then gets an error result, never a run', async () => {
    const calls = [
      { id: 'w1', name: 'notes-wipe', arguments: '{}' },
      { id: 'a1', name: 'ask_user', arguments: '{}' },
    ];
    const first = new ScriptedModel([{ toolCalls: calls }]);
    const paused = await runToolLoop({ client: first, toolset, executor }, base, 10, { caller, approvals, clientTools: [ask] });
    expect(paused.paused).toMatchObject({ pending: [{ id: 'w1' }], reasons: { w1: 'autonomy_level' } });

    const second = new ScriptedModel([{ content: 'ok' }]);
    const conversation = { ...base, messages: [...base.messages, { role: 'assistant' as const, content: null, tool_calls: calls }] };
    const resumed = await runToolLoop({ client: second, toolset, executor }, conversation, 10, {
      caller,
      approvals,
      clientTools: [ask],
      resume: { calls, approved: new Set(['w1', 'a1']) },
    });
    expect(ran).toEqual(['notes-wipe']);
    expect(resumed.toolExecutions.map((e) => [e.id, e.outcome])).toEqual([
      ['w1', 'ok'],
      ['a1', 'error'],
    ]);
    expect(resumed.toolExecutions[1]!.result).toMatch(/client-side tool and its caller gave no result/);
  });
});
