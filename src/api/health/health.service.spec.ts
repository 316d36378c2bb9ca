import { HealthService } from './health.service';
import { ReadinessCheck } from './readiness';

const up = (name: string): ReadinessCheck => ({ name, check: async () => undefined });
const down = (name: string, message: string): ReadinessCheck => ({
  name,
  check: async () => {
    throw new Error(message);
  },
});

describe('HealthService', () => {
  afterEach(() => jest.useRealTimers());

  it('health() has the upstream HealthStatus shape', () => {
    const h = new HealthService([]).health('0.1');
    expect(h).toEqual({ status: 'healthy', timestamp: expect.any(String), version: '0.1', uptime: expect.any(Number), dependencies: null });
    expect(new Date(h.timestamp).toISOString()).toBe(h.timestamp);
  });

  it('live() has the upstream LivenessStatus shape', () => {
    expect(new HealthService([]).live()).toEqual({ alive: true, timestamp: expect.any(String) });
  });

  it('is ready when every check passes', async () => {
    const report = await new HealthService([up('config'), up('state_store')]).ready();
    expect(report).toEqual({
      ready: true,
      timestamp: expect.any(String),
      checks: { config: { status: 'up' }, state_store: { status: 'up' } },
    });
  });

  it('is not ready when one check fails, and names it with its error', async () => {
    const report = await new HealthService([up('config'), down('state_store', 'ECONNREFUSED')]).ready();
    expect(report.ready).toBe(false);
    expect(report.checks).toEqual({ config: { status: 'up' }, state_store: { status: 'down', error: 'ECONNREFUSED' } });
  });

  it('bounds a check that never answers, so a hung dependency cannot hang the probe', async () => {
    jest.useFakeTimers();
    const hung: ReadinessCheck = { name: 'state_store', check: () => new Promise<void>(() => undefined) };
    const pending = new HealthService([up('config'), hung]).ready();
    await jest.advanceTimersByTimeAsync(2000);
    const report = await pending;
    expect(report.ready).toBe(false);
    expect(report.checks.state_store).toEqual({ status: 'down', error: 'no answer within 2000 ms' });
    expect(report.checks.config).toEqual({ status: 'up' });
  });

  it('runs the checks in parallel', async () => {
    jest.useFakeTimers();
    const slow = (name: string): ReadinessCheck => ({ name, check: () => new Promise<void>((r) => setTimeout(r, 1500)) });
    let report: { ready: boolean } | undefined;
    void new HealthService([slow('a'), slow('b')]).ready().then((r) => (report = r));
    await jest.advanceTimersByTimeAsync(1500); // checks run one after the other would need 3000 ms
    expect(report?.ready).toBe(true);
  });

  it('is ready with no checks at all', async () => {
    expect((await new HealthService([]).ready()).ready).toBe(true);
  });

  it("an agent's readiness waits for the shared checks and its own, not another agent's", async () => {
    const service = new HealthService([
      up('state_store'),
      { ...down('mcp_server:a', 'MCP server a unreachable'), agent: 'A:1' },
      { ...up('mcp_server:b'), agent: 'B:1' },
    ]);
    expect(await service.ready('A:1')).toMatchObject({
      ready: false,
      checks: { state_store: { status: 'up' }, 'mcp_server:a': { status: 'down', error: 'MCP server a unreachable' } },
    });
    expect(await service.ready('B:1')).toMatchObject({ ready: true, checks: { state_store: { status: 'up' }, 'mcp_server:b': { status: 'up' } } });
  });

  it("the process's readiness lists every dependency of every agent with its state", async () => {
    const service = new HealthService([
      up('state_store'),
      { ...down('mcp_server:a', 'MCP server a unreachable'), agent: 'A:1' },
      { ...up('mcp_server:b'), agent: 'B:1' },
    ]);
    expect(await service.processReady()).toEqual({
      ready: false,
      timestamp: expect.any(String),
      dependencies: [
        { name: 'state_store', state: 'up' },
        { name: 'mcp_server:a', state: 'down', detail: 'MCP server a unreachable', agent: 'A:1' },
        { name: 'mcp_server:b', state: 'up', agent: 'B:1' },
      ],
    });
  });
});
