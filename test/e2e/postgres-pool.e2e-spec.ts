/**
 * Issue 22, point 5: a replica whose PostgreSQL pool is exhausted never hangs a caller. A pool of
 * 5, every connection held by a follow-on (one on each of five tasks) whose commit waits on a row
 * lock another session holds, then 200 concurrent turns: each is answered 200, or 503
 * STATE_STORE_UNAVAILABLE once TA_POSTGRES_ACQUIRE_TIMEOUT_MS has passed without a connection;
 * once the lock goes, turns are served again, and the follow-ons that held the pool are answered
 * and stored once each.
 */
import { Client } from 'pg';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postgresStores } from '../support/postgres-stores';
import { testPostgresUrl } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';

const ACQUIRE_TIMEOUT_MS = 500;
/** How much later than the acquire timeout a 503 may come on a busy machine (the answer itself, the event loop). */
const SLACK_MS = 3000;

describe('a PostgreSQL pool of 5, every connection held, and 200 concurrent turns', () => {
  let llm: FakeOpenAi;
  let app: TestApp;
  let schema: string;
  let locker: Client;
  let monitor: Client;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    ({ schema } = await postgresStores('pool'));
    // The follow-ons' commits wait on the lock for seconds: the statement timeout outlasts that.
    // Every commit on a pooled connection (no pipelined lane: postgres-pipeline.e2e-spec.ts): this is the pool's bound.
    const store = new PostgresStateStore({
      url: testPostgresUrl(),
      schema,
      poolMax: 5,
      acquireTimeoutMs: ACQUIRE_TIMEOUT_MS,
      statementTimeoutMs: 30_000,
      pipeline: false,
    });
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
    app = await startTestApp({ agents: { 'pool.yaml': v3Agent('Pool') }, env, store });
    locker = new Client({ connectionString: testPostgresUrl() });
    monitor = new Client({ connectionString: testPostgresUrl() });
    await Promise.all([locker.connect(), monitor.connect()]);
  }, 60_000);
  afterAll(async () => {
    await locker?.end();
    await monitor?.end();
    await app?.close();
    await llm?.close();
  });

  it('each turn is answered, 200 or 503 within the acquire timeout; then served again; the held follow-ons answered once', async () => {
    const api = v3Client(`${app.url}/Pool/1`);
    // Five tasks: a replica commits one write per task at a time, so one task holds one connection.
    const taskIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      llm.script(reply.text('base'));
      taskIds.push((await api.say('base')).body.task_id as string);
    }

    // Another session locks their headers: each follow-on's commit waits on it, on a connection of the pool.
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM ${schema}.tasks WHERE tenant_id = $1 AND task_id = ANY($2) FOR UPDATE`, [DEV_TENANT_ID, taskIds]);
    for (let i = 0; i < 5; i++) llm.script(reply.text(`follow-on ${i}`));
    const followOns = taskIds.map((taskId, i) => api.say(`follow-on ${i}`, { task_id: taskId }));
    // Read on a connection of its own (inside the locker's transaction, pg_stat_activity is one
    // snapshot), and only this file's statements (other files share the run's PostgreSQL).
    const waiting = async () =>
      Number(
        (await monitor.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [`%${schema}.%`]))
          .rows[0]!.n,
      );
    for (const deadline = Date.now() + 20_000; (await waiting()) < 5 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
    expect(await waiting()).toBe(5);

    // The lock is let go a while into the 200, so the later turns find connections again.
    const released = new Promise<void>((ok) => setTimeout(() => void locker.query('COMMIT').then(() => ok()), 1500));
    for (let i = 0; i < 200; i++) llm.script(reply.text('fresh'));
    const turns = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 10));
        const at = Date.now();
        const res = await api.say(`turn ${i}`);
        return { status: res.status, code: res.body.code as string | undefined, ms: Date.now() - at };
      }),
    );
    await released;

    expect(turns.filter((t) => t.status !== 200 && t.status !== 503)).toEqual([]);
    const refused = turns.filter((t) => t.status === 503);
    expect(refused.length).toBeGreaterThan(0); // the pool really was exhausted...
    expect(turns.filter((t) => t.status === 200).length).toBeGreaterThan(0); // ...and served again after
    for (const t of refused) expect(t.code).toBe('STATE_STORE_UNAVAILABLE');
    expect(Math.max(...refused.map((t) => t.ms))).toBeLessThan(ACQUIRE_TIMEOUT_MS + SLACK_MS);

    // The follow-ons that held the pool: each answered once it had its lock, and stored once.
    const decided = await Promise.all(followOns);
    expect(decided.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const [i, taskId] of taskIds.entries()) {
      const task = await api.task(taskId);
      expect(task.body.requests.map((r: { status: string; request_id: string }) => [r.status, r.request_id])).toEqual([
        ['Completed', expect.any(String)],
        ['Completed', decided[i]!.body.request_id],
      ]);
    }
  }, 90_000);
});
