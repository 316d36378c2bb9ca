import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { LlmClient, LlmRequest, LlmResult, LlmStreamEvent } from '../llm/llm-client.port';
import { ToolExecutor } from '../tools/tool-executor';
import type { Tool } from '../tools/tool.port';
import { Toolset } from '../tools/toolset';
import { partialRunOf, runToolLoop } from './tool-loop';

/** A scripted model (the vendor is the one thing tests fake): one result per turn, requests kept. */
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

const add: Tool = {
  name: 'math-add',
  description: 'Adds',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  risk: 'read_only',
  source: 'test',
  execute: async ({ a, b }) => String((a as number) + (b as number)),
};
const toolset = new Toolset([add]);
const executor = new ToolExecutor({ timeoutMs: 1000, maxRetries: 0, retryBaseMs: 1 });
const caller = { principal: { tenantId: 't', ownerId: 'o' } };
const base: LlmRequest = { model: 'm', messages: [{ role: 'user', content: 'what is 1+2 and 3+4?' }] };

describe('runToolLoop', () => {
  it('runs the tool round, sends every tool on every turn, and returns what it appended', async () => {
    const model = new ScriptedModel([
      {
        content: 'Let me add.',
        toolCalls: [
          { id: 'c1', name: 'math-add', arguments: '{"a":1,"b":2}' },
          { id: 'c2', name: 'math-add', arguments: '{"a":3,"b":4}' },
        ],
      },
      { content: '3 and 7' },
    ]);
    const result = await runToolLoop({ client: model, toolset, executor }, base, 10, { caller });
    expect(result.content).toBe('3 and 7');
    expect(result.usage).toEqual({ completion_tokens: 2, prompt_tokens: 4, total_tokens: 6 });
    expect(result.appended).toEqual([
      {
        role: 'assistant',
        content: 'Let me add.',
        tool_calls: [
          { id: 'c1', name: 'math-add', arguments: '{"a":1,"b":2}' },
          { id: 'c2', name: 'math-add', arguments: '{"a":3,"b":4}' },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '3' },
      { role: 'tool', tool_call_id: 'c2', content: '7' },
    ]);
    expect(model.requests.map((r) => r.tools?.map((t) => t.name))).toEqual([['math-add'], ['math-add']]);
    expect(model.requests[1]!.messages).toEqual([...base.messages, ...result.appended]);
    // A tool round appends to a copy (the loop sends the caller's own list until then).
    expect(base.messages).toHaveLength(1);
    expect(result.toolExecutions.map((e) => [e.id, e.outcome])).toEqual([
      ['c1', 'ok'],
      ['c2', 'ok'],
    ]);
  });

  it('stops a runaway loop after max_tool_rounds with TOOL_ROUNDS_EXCEEDED, keeping what ran', async () => {
    const ask = { toolCalls: [{ id: '', name: 'math-add', arguments: '{"a":1,"b":1}' }] };
    const model = new ScriptedModel([ask, ask, ask]);
    const err = await runToolLoop({ client: model, toolset, executor }, base, 2, { caller }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe(ErrorCode.TOOL_ROUNDS_EXCEEDED);
    expect((err as DomainError).message).toMatch(/max_tool_rounds allows 2/);
    expect(model.requests).toHaveLength(3);
    const partial = partialRunOf(err)!;
    expect(partial.toolExecutions).toHaveLength(2);
    // a missing provider id is replaced, and the result is paired with the replacement
    const firstCall = (partial.appended[0] as { tool_calls: { id: string }[] }).tool_calls[0]!.id;
    expect(firstCall).toMatch(/^call_/);
    expect(partial.appended[1]).toMatchObject({ role: 'tool', tool_call_id: firstCall });
  });

  it('sends no tools field to a model of an agent without tools', async () => {
    const model = new ScriptedModel([{ content: 'hi' }]);
    await runToolLoop({ client: model, toolset: Toolset.EMPTY, executor }, base, 10, {});
    expect(model.requests[0]!.tools).toBeUndefined();
  });

  describe('approvals', () => {
    const writes: string[] = [];
    const del: Tool = {
      name: 'notes-delete',
      description: 'Deletes',
      parameters: { type: 'object', properties: { id: { type: 'string' } } },
      risk: 'write_high_risk',
      source: 'test',
      execute: async ({ id }) => {
        writes.push(String(id));
        return `deleted ${String(id)}`;
      },
    };
    const guarded = new Toolset([add, del]);
    const turn = {
      content: 'Adding and deleting.',
      toolCalls: [
        { id: 'a1', name: 'math-add', arguments: '{"a":1,"b":2}' },
        { id: 'd1', name: 'notes-delete', arguments: '{"id":"n1"}' },
      ],
    };
    const L1 = { autonomy_level: 'L1' as const, plan_threshold: 3 };
    beforeEach(() => writes.splice(0));

    it('pauses before a turn with a call that needs approval: nothing of that turn runs', async () => {
      const model = new ScriptedModel([turn]);
      const result = await runToolLoop({ client: model, toolset: guarded, executor }, base, 10, { caller, approvals: { policy: L1, canPause: true } });
      expect(result.paused).toEqual({
        calls: turn.toolCalls,
        pending: [turn.toolCalls[1]],
        plan: false,
        reasons: { d1: 'autonomy_level' },
        risks: { a1: 'read_only', d1: 'write_high_risk' },
      });
      expect(result.appended).toEqual([{ role: 'assistant', content: 'Adding and deleting.', tool_calls: turn.toolCalls }]);
      expect(result.toolExecutions).toEqual([]);
      expect(writes).toEqual([]);
    });

    it('resumes: approved calls run, rejected ones get a rejection result, then the model continues', async () => {
      const model = new ScriptedModel([{ content: 'done' }]);
      const conversation = { ...base, messages: [...base.messages, { role: 'assistant' as const, content: null, tool_calls: turn.toolCalls }] };
      const result = await runToolLoop({ client: model, toolset: guarded, executor }, conversation, 10, {
        caller,
        approvals: { policy: L1, canPause: true },
        resume: { calls: turn.toolCalls, approved: new Set(['a1']) },
      });
      expect(result.content).toBe('done');
      expect(writes).toEqual([]);
      expect(result.toolExecutions.map((e) => [e.id, e.outcome])).toEqual([
        ['a1', 'ok'],
        ['d1', 'rejected'],
      ]);
      expect(model.requests[0]!.messages.slice(-2)).toEqual([
        { role: 'tool', tool_call_id: 'a1', content: '3' },
        { role: 'tool', tool_call_id: 'd1', content: expect.stringMatching(/user rejected this call of notes-delete/) },
      ]);
    });

    it('cannot pause (stateless): the call needing approval does not run and the model is told why', async () => {
      const model = new ScriptedModel([turn, { content: 'ok' }]);
      const result = await runToolLoop({ client: model, toolset: guarded, executor }, base, 10, { caller });
      expect(result.paused).toBeUndefined();
      expect(writes).toEqual([]);
      expect(result.toolExecutions.map((e) => [e.id, e.outcome])).toEqual([
        ['a1', 'ok'],
        ['d1', 'error'],
      ]);
      expect(model.requests[1]!.messages.at(-1)).toMatchObject({ tool_call_id: 'd1', content: expect.stringMatching(/needs a human's approval/) });
    });
  });
});
