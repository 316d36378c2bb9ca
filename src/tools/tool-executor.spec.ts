import { ToolError } from './tool-error';
import { ToolExecutor } from './tool-executor';
import type { Tool, ToolContext } from './tool.port';

const principal = { tenantId: 't', ownerId: 'o' };

function tool(name: string, execute: Tool['execute'], extra: Partial<Tool> = {}): Tool {
  return {
    name,
    description: name,
    parameters: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
    risk: 'read_only',
    source: 'test',
    execute,
    ...extra,
  };
}

const byName = (...tools: Tool[]) => new Map(tools.map((t) => [t.name, t]));
const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

describe('ToolExecutor', () => {
  const executor = new ToolExecutor({ timeoutMs: 200, maxRetries: 2, retryBaseMs: 5 });

  it('runs the calls of a turn concurrently and returns results in call order', async () => {
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = tool('slow', async () => {
      started.push('slow');
      await gate;
      return 'slow done';
    });
    const fast = tool('fast', async () => {
      started.push('fast');
      release(); // only reachable if `slow` has not blocked the turn
      return 'fast done';
    });
    const results = await executor.executeAll(byName(slow, fast), [call('1', 'slow'), call('2', 'fast')], { principal });
    expect(started).toEqual(['slow', 'fast']);
    expect(results.map((r) => [r.id, r.result])).toEqual([
      ['1', 'slow done'],
      ['2', 'fast done'],
    ]);
  });

  it("keeps the extra data of a call that succeeded, none of an error result's", async () => {
    const items = [{ key: 'k', value: 'v' }];
    const ok = tool('ok', async () => ({ content: 'fine', extraData: items }));
    const bad = tool('bad', async () => ({ content: 'nope', isError: true, extraData: [{ key: 'lost', value: 'x' }] }));
    const plain = tool('plain', async () => 'plain');
    const [a, b, c] = await executor.executeAll(byName(ok, bad, plain), [call('1', 'ok'), call('2', 'bad'), call('3', 'plain')], { principal });
    expect(a).toMatchObject({ outcome: 'ok', result: 'fine', extra_data: items });
    expect(b!.outcome).toBe('error');
    expect(b).not.toHaveProperty('extra_data');
    expect(c).not.toHaveProperty('extra_data');
  });

  it('answers an unknown tool, unparsable and invalid arguments with error results, without calling', async () => {
    let called = 0;
    const t = tool('t', async () => `${++called}`);
    const results = await executor.executeAll(byName(t), [call('1', 'nope'), call('2', 't', '{bad'), call('3', 't', { n: 'x' })], { principal });
    expect(results.map((r) => r.outcome)).toEqual(['error', 'error', 'error']);
    expect(results[0]!.result).toBe('Error: unknown tool "nope"');
    expect(results[1]!.result).toMatch(/^Error: invalid arguments for t: the arguments are not valid JSON/);
    expect(results[2]!.result).toMatch(/arguments\/n must be integer/);
    expect(called).toBe(0);
  });

  it('retries a retryable failure with backoff, then succeeds', async () => {
    let attempts = 0;
    const t = tool(
      'flaky',
      async () => {
        if (++attempts < 3) throw new ToolError('busy', { retryable: true });
        return 'finally';
      },
      { risk: 'write_high_risk' },
    );
    const [r] = await executor.executeAll(byName(t), [call('1', 'flaky')], { principal });
    expect(r).toMatchObject({ outcome: 'ok', result: 'finally', attempts: 3 });
  });

  it('gives up after TA_TOOL_MAX_RETRIES and reports the last error', async () => {
    const t = tool('down', async () => {
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    });
    const [r] = await executor.executeAll(byName(t), [call('1', 'down')], { principal });
    expect(r).toMatchObject({ outcome: 'error', result: 'Error: down failed: connect ECONNREFUSED', attempts: 3 });
  });

  it('times out a call that ignores its signal, and retries a timeout only for idempotent tools', async () => {
    let seen: AbortSignal | undefined;
    const hangs = (risk: Tool['risk']) =>
      tool(
        `hang_${risk}`,
        (_a, ctx: ToolContext) => {
          seen = ctx.signal;
          return new Promise(() => undefined);
        },
        { risk, timeoutMs: 30 },
      );
    const [write] = await executor.executeAll(byName(hangs('write_high_risk')), [call('1', 'hang_write_high_risk')], { principal });
    expect(write).toMatchObject({ outcome: 'error', attempts: 1 });
    expect(write!.result).toMatch(/timed out after 30 ms/);
    expect(seen?.aborted).toBe(true);
    const [read] = await executor.executeAll(byName(hangs('read_only')), [call('2', 'hang_read_only')], { principal });
    expect(read).toMatchObject({ outcome: 'error', attempts: 3 });
  });

  it('aborts running tools when the request is canceled', async () => {
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const t = tool('long', (_a, ctx) => {
      toolSignal = ctx.signal;
      setTimeout(() => controller.abort(), 5);
      return new Promise(() => undefined);
    });
    const [r] = await executor.executeAll(byName(t), [call('1', 'long')], { principal, signal: controller.signal });
    expect(r!.outcome).toBe('canceled');
    expect(toolSignal?.aborted).toBe(true);
  });

  it('reports a tool-declared error result as an error, without retry', async () => {
    let attempts = 0;
    const t = tool('says_no', async () => ({ content: 'no such city', isError: (++attempts, true) }));
    const [r] = await executor.executeAll(byName(t), [call('1', 'says_no')], { principal });
    expect(r).toMatchObject({ outcome: 'error', result: 'Error: no such city', attempts: 1 });
    expect(attempts).toBe(1);
  });
});
