/**
 * Reconnected v3 streams that follow a request running on another replica poll the store; that
 * polling is bounded (docs/configuration.md, TA_STREAM_REPLAY_MAX_PER_CALLER): past the per-caller
 * cap a reconnect is 429 TOO_MANY_STREAMS with Retry-After before its stream opens, concurrent
 * reconnects share one poller that backs off while nothing happens, and when the replica running
 * the request dies the replays end with its outcome instead of polling on.
 *
 * Replica A is a real server process (killed with SIGKILL), B runs here; both on a redis-server of
 * this test's own, so `INFO commandstats` counts only their commands.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { freePort, RedisServerHandle, startRedisServer } from '../support/services';
import { getSse, openSse, parseSse, SseReader } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { text } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Poll
version: 1
description: Agent whose streams are followed from another replica
spec:
  agent:
    name: default
    model: gpt-test
`;
const ROOT = join(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Commands Redis has run so far (every command but INFO itself). */
async function commandCount(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') calls += Number(m[2]);
  return calls;
}

/** Commands per second over `ms`. */
async function commandRate(redis: Redis, ms: number): Promise<number> {
  const before = await commandCount(redis);
  await sleep(ms);
  return ((await commandCount(redis)) - before) / (ms / 1000);
}

describe('replays that follow a request running on another replica', () => {
  let llm: FakeOpenAi;
  let server: RedisServerHandle;
  let stats: Redis;
  let a: ChildProcess | undefined;
  let b: TestApp | undefined;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    server = await startRedisServer();
    stats = new Redis(server.url);
  });
  afterAll(async () => {
    a?.kill('SIGKILL');
    await b?.close();
    stats?.disconnect();
    await server?.stop();
    await llm?.close();
  });

  it('caps them per caller (429 TOO_MANY_STREAMS), keeps the store polling bounded, and ends them with the outcome when the request is lost', async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh
    const dir = writeAgentDir({ 'poll.yaml': AGENT });
    const port = await freePort();
    const common = {
      TA_AUTH_MODE: 'dev',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: server.url,
      TA_TASK_LEASE_MS: '1500',
    };
    a = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], {
      env: { PATH: process.env.PATH ?? '', TA_HOST: '127.0.0.1', TA_LOG_LEVEL: 'warn', ...common },
      stdio: 'ignore',
    });
    const aUrl = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 200 && (await request(`${aUrl}/health/live`).catch(() => undefined))?.status !== 200; i++) await sleep(50);
    b = await startTestApp({ configPath: dir, env: { ...common, TA_LOG_LEVEL: 'warn', TA_STREAM_REPLAY_MAX_PER_CALLER: '8', TA_SSE_KEEPALIVE_MS: '500' } });

    // A runs a request that hangs after one delta; its client goes away.
    llm.script(reply.hang(['partial ']));
    const original = await openSse(`${aUrl}/Poll/1/sse`, { items: [text('go')] });
    const first = parseSse(await original.readUntil((so) => so.includes('event: partial-response'))).find((e) => e.event)!;
    original.abort();
    const taskId = JSON.parse(first.data).task_id as string;
    // A renewing its lease (every 500 ms, ~14 commands each): over the same 3 s as the window below,
    // so that the one renewal more or less a window may catch moves each rate by ~5 commands/s, not ~9.
    const baseline = await commandRate(stats, 3_000);

    // One user reconnects 12 times at once on B.
    const replays: SseReader[] = await Promise.all(
      Array.from({ length: 12 }, () => getSse(`${b!.url}/Poll/1/tasks/${taskId}/stream`, { 'last-event-id': first.id! })),
    );
    await sleep(2_000); // the pollers' first reads, and their backoff
    const following = await commandRate(stats, 3_000);
    process.stdout.write(
      `replay polling: ${baseline.toFixed(1)} commands/s before, ${following.toFixed(1)} commands/s with 12 reconnects of one user (statuses ${replays.map((r) => r.status).join(',')})\n`,
    );

    const admitted = replays.filter((r) => r.status === 200);
    const refused = replays.filter((r) => r.status !== 200);
    expect(admitted).toHaveLength(8);
    expect(refused).toHaveLength(4);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(JSON.parse(await r.readAll())).toMatchObject({ status: 429, code: 'TOO_MANY_STREAMS' });
    }
    // One shared poller, backed off: measured 3-7 commands/s more. Twelve independent ones would
    // poll twelve times as often (hundreds a second before their backoff); the bound leaves room for
    // a renewal more or less in each window (~5 commands/s each, see above).
    expect(following - baseline).toBeLessThan(20);

    // A dies: past its lease the replays end with the request's stored outcome, not polling on.
    a.kill('SIGKILL');
    const ended = await Promise.all(admitted.map(async (r) => parseSse(await r.readAll()).filter((e) => e.event)));
    for (const events of ended) {
      const last = events.at(-1)!;
      expect(['final-response', 'error']).toContain(last.event);
      expect(JSON.stringify(JSON.parse(last.data))).toContain('ABANDONED');
    }
    // Their admissions were released with them.
    const again = await request(`${b.url}/Poll/1/tasks/${taskId}/stream`, { headers: { 'last-event-id': first.id! } });
    expect(again.status).not.toBe(429);
  }, 30_000);
});
