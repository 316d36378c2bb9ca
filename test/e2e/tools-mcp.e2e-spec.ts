import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { McpServerConfig } from '../../src/agents/config/mcp-server.schema';
import type { LlmToolCall } from '../../src/llm/llm-client.port';
import { McpClientManager } from '../../src/tools/mcp/mcp-client-manager';
import { ToolExecutor } from '../../src/tools/tool-executor';
import type { Tool } from '../../src/tools/tool.port';
import { McpTestServer, startMcpTestServer } from '../support/mcp-test-server';

const EVERYTHING = resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const alice = { tenantId: 't1', ownerId: 'alice' };

function mcpConfig(o: Partial<McpServerConfig>): McpServerConfig {
  return plainToInstance(McpServerConfig, o);
}

async function toolsOf(manager: McpClientManager, config: McpServerConfig): Promise<Map<string, Tool>> {
  const list = await manager.source(config).list();
  return new Map(list.map((t) => [t.name, t]));
}

let n = 0;
const call = (name: string, args: unknown = {}): LlmToolCall => ({ id: `call_${++n}`, name, arguments: JSON.stringify(args) });

/** Children of this process whose command line mentions `needle` (the stdio MCP servers we started). */
function childPids(needle: string): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', needle], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

describe('MCP over stdio: @modelcontextprotocol/server-everything', () => {
  const manager = new McpClientManager(5_000);
  const executor = new ToolExecutor({ timeoutMs: 5_000, maxRetries: 0, retryBaseMs: 10 });
  let tools: Map<string, Tool>;

  beforeAll(async () => {
    tools = await toolsOf(manager, mcpConfig({ name: 'everything', transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }));
  });
  afterAll(() => manager.close());

  it('lists the tools once, namespaced by server, with risk from the annotations', () => {
    expect(tools.get('everything-echo')).toMatchObject({ risk: 'read_only', idempotent: true, source: 'mcp:everything' });
    expect(tools.get('everything-get-sum')?.parameters).toMatchObject({ type: 'object', required: ['a', 'b'] });
    expect(tools.has('everything-trigger-long-running-operation')).toBe(true);
  });

  it('calls tools concurrently and returns the results in the order of the calls', async () => {
    const calls = [call('everything-get-sum', { a: 2, b: 3 }), call('everything-echo', { message: 'hi' })];
    const results = await executor.executeAll(tools, calls, { principal: alice });
    expect(results.map((r) => [r.id, r.outcome, r.result])).toEqual([
      [calls[0]!.id, 'ok', 'The sum of 2 and 3 is 5.'],
      [calls[1]!.id, 'ok', 'Echo: hi'],
    ]);
  });

  it('refuses bad arguments before calling the server', async () => {
    const [r] = await executor.executeAll(tools, [call('everything-get-sum', { a: 'two' })], { principal: alice });
    expect(r!.outcome).toBe('error');
    expect(r!.result).toMatch(/^Error: invalid arguments for everything-get-sum: .*arguments\/a must be number/);
    expect(r!.attempts).toBe(0);
  });

  it('turns a server killed mid-call into an error result, and reconnects on the next call', async () => {
    const before = childPids('server-everything');
    expect(before).toHaveLength(1);
    const running = executor.execute(
      tools.get('everything-trigger-long-running-operation'),
      call('everything-trigger-long-running-operation', { duration: 30, steps: 1 }),
      { principal: alice },
    );
    // Kill it once the call is in flight (the child is alive and the call has not settled).
    await new Promise((r) => setTimeout(r, 200));
    process.kill(before[0]!, 'SIGKILL');
    const r = await running;
    expect(r.outcome).toBe('error');
    expect(r.duration_ms).toBeLessThan(5_000);
    expect(r.result).toMatch(/Connection closed/i);

    const [again] = await executor.executeAll(tools, [call('everything-echo', { message: 'back' })], { principal: alice });
    expect(again).toMatchObject({ outcome: 'ok', result: 'Echo: back' });
    const after = childPids('server-everything');
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
  });

  it('stops the stdio child on close', async () => {
    expect(childPids('server-everything')).toHaveLength(1);
    await manager.close();
    for (let i = 0; i < 50 && childPids('server-everything').length; i++) await new Promise((r) => setTimeout(r, 50));
    expect(childPids('server-everything')).toHaveLength(0);
  });
});

describe('MCP over streamable HTTP: the in-repo test server', () => {
  let server: McpTestServer;
  const manager = new McpClientManager(1_000);
  const executor = new ToolExecutor({ timeoutMs: 2_000, maxRetries: 2, retryBaseMs: 10 });
  let tools: Map<string, Tool>;

  beforeAll(async () => {
    server = await startMcpTestServer();
    tools = await toolsOf(
      manager,
      mcpConfig({ name: 'test', transport: 'http', url: server.url, user_id_header: 'X-User-Id', forward_token: true, request_timeout: 0.5 }),
    );
  });
  afterAll(async () => {
    await manager.close();
    await server.stop();
  });

  it('maps annotations to risk as CONFIG.md says', () => {
    expect(tools.get('test-whoami')?.risk).toBe('read_only');
    expect(tools.get('test-fail')?.risk).toBe('write_low_risk');
    expect(tools.get('test-wipe')?.risk).toBe('write_high_risk');
    expect(tools.get('test-plain')?.risk).toBe('write_high_risk');
  });

  it('lets tool_governance_overrides change the risk and approval of a tool (by MCP name or model name)', async () => {
    const other = new McpClientManager(1_000);
    try {
      const overridden = await toolsOf(
        other,
        mcpConfig({
          name: 'gov',
          transport: 'http',
          url: server.url,
          tool_governance_overrides: { wipe: { risk: 'write_low_risk' }, 'gov-echo': { requires_hitl: true } } as never,
        }),
      );
      expect(overridden.get('gov-wipe')).toMatchObject({ risk: 'write_low_risk' });
      expect(overridden.get('gov-echo')).toMatchObject({ risk: 'read_only', requiresHitl: true });
      expect(overridden.get('gov-plain')?.requiresHitl).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it("sends each caller's own identity and token on each call, over one shared session", async () => {
    const bob = { tenantId: 't1', ownerId: 'bob' };
    const [a, b] = await Promise.all([
      executor.execute(tools.get('test-whoami'), call('test-whoami'), { principal: alice, bearerToken: 'tok-a' }),
      executor.execute(tools.get('test-whoami'), call('test-whoami'), { principal: bob }),
    ]);
    expect(JSON.parse(a.result)).toEqual({ user: 'alice', token: true });
    expect(JSON.parse(b.result)).toEqual({ user: 'bob', token: false });
    expect(server.calls.filter((c) => c.tool === 'whoami').map((c) => [c.userId, c.authorization])).toEqual(
      expect.arrayContaining([
        ['alice', 'Bearer tok-a'],
        ['bob', undefined],
      ]),
    );
  });

  it("sends the caller's tenant id beside the user id (tenant_id_header), so same-named users of two tenants differ", async () => {
    const other = new McpClientManager(1_000);
    try {
      const paired = await toolsOf(
        other,
        mcpConfig({ name: 'mt', transport: 'http', url: server.url, user_id_header: 'X-User-Id', tenant_id_header: 'X-Tenant-Id' }),
      );
      const before = server.calls.length;
      await Promise.all([
        executor.execute(paired.get('mt-whoami'), call('mt-whoami'), { principal: { tenantId: 't1', ownerId: 'alice' } }),
        executor.execute(paired.get('mt-whoami'), call('mt-whoami'), { principal: { tenantId: 't2', ownerId: 'alice' } }),
      ]);
      expect(
        server.calls
          .slice(before)
          .map((c) => [c.tenantId, c.userId])
          .sort(),
      ).toEqual([
        ['t1', 'alice'],
        ['t2', 'alice'],
      ]);
      // Without tenant_id_header (the suite's server config), no tenant header is sent.
      await executor.execute(tools.get('test-whoami'), call('test-whoami'), { principal: alice });
      expect(server.calls.at(-1)).toMatchObject({ userId: 'alice', tenantId: undefined });
    } finally {
      await other.close();
    }
  });

  it('refuses a tenant_id_header equal to user_id_header', () => {
    const same = mcpConfig({ name: 'x', transport: 'http', url: server.url, user_id_header: 'X-Id', tenant_id_header: 'x-id' });
    expect(validateSync(same).map((e) => e.property)).toEqual(['tenant_id_header']);
    const pair = mcpConfig({ name: 'x', transport: 'http', url: server.url, user_id_header: 'X-User-Id', tenant_id_header: 'X-Tenant-Id' });
    expect(validateSync(pair)).toEqual([]);
  });

  it('returns a tool error result as an error, without retrying it', async () => {
    const r = await executor.execute(tools.get('test-fail'), call('test-fail'), { principal: alice });
    expect(r).toMatchObject({ outcome: 'error', result: 'Error: boom: the test tool failed', attempts: 1 });
  });

  it('times a hung call out within request_timeout, cancels it on the server, and works again next call', async () => {
    const r = await executor.execute(tools.get('test-slow'), call('test-slow', { ms: 10_000 }), { principal: alice });
    expect(r.outcome).toBe('error');
    expect(r.result).toMatch(/timed out after 500 ms/);
    expect(r.attempts).toBe(3); // read-only: retried twice, each bounded by the timeout
    expect(r.duration_ms).toBeLessThan(2_500);
    await waitFor(() => server.canceled.length === 3);
    const ok = await executor.execute(tools.get('test-echo'), call('test-echo', { text: 'after' }), { principal: alice });
    expect(ok).toMatchObject({ outcome: 'ok', result: 'echo: after' });
  });

  it('drops the session of a server that hangs (no answer to a ping either) and reconnects next call', async () => {
    const sessions = server.initializations();
    server.hang(true);
    const r = await executor.execute(tools.get('test-fail'), call('test-fail'), { principal: alice });
    expect(r.outcome).toBe('error'); // a write: not retried after a timeout
    expect(r.result).toMatch(/timed out after 500 ms/);
    expect(r.attempts).toBe(1);
    await waitFor(() => server.parkedMethods().includes('ping')); // the health check is stuck too
    server.hang(false);
    const ok = await executor.execute(tools.get('test-echo'), call('test-echo', { text: 'unstuck' }), { principal: alice });
    expect(ok).toMatchObject({ outcome: 'ok', result: 'echo: unstuck' });
    expect(server.initializations()).toBe(sessions + 1);
  });

  it('retries a connection reset on an idempotent tool and succeeds', async () => {
    server.dropNextCalls(1);
    const r = await executor.execute(tools.get('test-echo'), call('test-echo', { text: 'again' }), { principal: alice });
    expect(r).toMatchObject({ outcome: 'ok', result: 'echo: again', attempts: 2 });
  });

  it('reconnects after the server restarted (its session is gone)', async () => {
    await server.restart();
    const r = await executor.execute(tools.get('test-echo'), call('test-echo', { text: 'new session' }), { principal: alice });
    expect(r).toMatchObject({ outcome: 'ok', result: 'echo: new session' });
  });
});

async function waitFor(cond: () => boolean, ms = 2_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}
