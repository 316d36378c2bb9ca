/**
 * Failures of the parts around a stateful request: the store going away, a record that cannot be
 * read, and the process that runs a request dying. None may hang a request, half-write a task, or
 * block the task forever. On PostgreSQL (a server of the file's own, so stopping it or killing its
 * backends disturbs no other file): a restart during a request whose lease outlasts it, and the
 * final commit's connection killed while the commit waits in the database.
 */
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { RedisKeys } from '../../src/state/backends/redis/redis-keys';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { APPLICATION_NAME, PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { Client } from 'pg';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { freePort, PostgresServerHandle, RedisServerHandle, startPostgresServer, startRedisServer, testRedisUrl, uniqueName } from '../support/services';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { modelInput, v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Faulty
version: 1
description: Agent for fault tests
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const ROOT = join(__dirname, '..', '..');

describe('v3 when the state store fails', () => {
  let llm: FakeOpenAi;
  let redis: RedisServerHandle;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;
  const prefix = `${uniqueName('faults')}:`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    redis = await startRedisServer();
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: redis.url, keyPrefix: prefix }),
    });
    api = v3Client(`${t.url}/Faulty/1`);
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
    await llm?.close();
  });

  it('answers 503 within a bounded time while Redis is down, writes nothing, and recovers when it is back', async () => {
    llm.script(reply.text('before'));
    const first = await api.say('before');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id;

    await redis.stop();
    const started = Date.now();
    const followOn = await api.say('during', { task_id: taskId });
    const fresh = await api.say('new task during');
    const read = await api.task(taskId);
    const ready = await request(`${t.url}/Faulty/1/health/ready`);
    expect(Date.now() - started).toBeLessThan(12_000);
    for (const res of [followOn, fresh, read]) {
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('STATE_STORE_UNAVAILABLE');
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect(ready.status).toBe(503);
    expect(ready.body.checks.state_store.status).toBe('down');
    expect(llm.requests).toHaveLength(1); // the model was never called without a stored request

    await redis.start(); // empty again (no persistence): the store is back, the data is not
    const deadline = Date.now() + 10_000;
    let after = await request(`${t.url}/Faulty/1/health/ready`);
    while (after.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      after = await request(`${t.url}/Faulty/1/health/ready`);
    }
    expect(after.status).toBe(200);
    llm.script(reply.text('after'));
    expect((await api.say('after')).status).toBe(200);
  }, 30_000); // its own bound on the outage answers is 12 s; a restart of Redis follows
});

describe('v3 on a PostgreSQL of its own that restarts or kills a backend mid-request (two replicas)', () => {
  const SCHEMA = 'faults';
  let llm: FakeOpenAi;
  let pg: PostgresServerHandle;
  /** The test's own view of the store (reads only), on the same schema. */
  let view: PostgresStateStore;
  let admin: Client | undefined;
  const apps: TestApp[] = [];
  /** A replica on this PostgreSQL, with a lease of `leaseMs`. */
  const replica = async (leaseMs: number, port = pg.port) => {
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const store = new PostgresStateStore({ url, schema: SCHEMA, acquireTimeoutMs: 1000, sweepMs: 0 });
    const app = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_TASK_LEASE_MS: String(leaseMs) },
      store,
    });
    apps.push(app);
    return { app, api: v3Client(`${app.url}/Faulty/1`) };
  };
  const connectAdmin = async () => {
    if (admin) return admin;
    admin = new Client({ connectionString: pg.url });
    admin.on('error', () => undefined);
    await admin.connect();
    return admin;
  };

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    pg = await startPostgresServer();
    view = new PostgresStateStore({ url: pg.url, schema: SCHEMA, sweepMs: 0 });
    await view.prepare(); // migrated once, as the first booting replica would
  }, 60_000);
  afterAll(async () => {
    for (const app of apps) await app.close();
    await view?.close();
    await admin?.end().catch(() => undefined);
    await pg?.stop();
    await llm?.close();
  });
  afterEach(() => llm.discard());

  it('stopped (pg_ctl stop -m immediate) and started again during a request whose lease outlasts the outage: follow-ons 503 then 409, the answer kept', async () => {
    // Far longer than the outage, the crash recovery and a reconnect on a busy machine; the test waits
    // for a renewal (every third of it), never for the lease to run out.
    const LEASE_MS = 9000;
    const [c, d] = [await replica(LEASE_MS), await replica(LEASE_MS)];
    llm.script(reply.text('base'));
    const first = await c.api.say('base');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('survived a restart', { until: new Promise<void>((r) => (release = r)) }));
    const long = c.api.say('long', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);

    await pg.halt('immediate'); // every backend quits at once, as in a crash; the restart recovers from the WAL
    const down: number[] = [];
    const downUntil = Date.now() + 1000;
    while (Date.now() < downUntil || down.length < 2) {
      const res = await d.api.say('while down', { task_id: taskId });
      down.push(res.status);
      if (res.status === 503) expect(res.body.code).toBe('STATE_STORE_UNAVAILABLE');
      await new Promise((r) => setTimeout(r, 200));
    }
    await pg.start();

    // The holder renews its lease once PostgreSQL is back: a lease granted after the restart, by
    // the database's clock (bounded poll of the stored task, not a wait sized to this machine).
    const restartedAt = await (async () => {
      await waitFor(() => view.ping());
      return view.now();
    })();
    const renewedAfter = restartedAt + LEASE_MS - view.clockSkewMs;
    const leaseNow = async () => (await view.getTask(DEV_TENANT_ID, taskId).catch(() => undefined))?.lease?.expiresAt ?? 0;
    let lease = await leaseNow();
    for (const deadline = Date.now() + 15_000; lease <= renewedAfter && Date.now() < deadline; lease = await leaseNow()) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(lease).toBeGreaterThan(renewedAfter);
    llm.script(reply.text('must not run'));
    const after = await d.api.say('after the restart', { task_id: taskId });
    llm.discard();

    expect(down.filter((s) => s !== 503)).toEqual([]); // the store was really down, and nothing ran
    expect(after.status).toBe(409); // the lease still held, renewed after the restart
    release();
    const res = await long;
    expect([res.status, res.body.content?.output]).toEqual([200, 'survived a restart']);
    const task = await d.api.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed']);
    expect(task.body.requests[1].output).toBe('survived a restart');
  }, 60_000);

  it("a turn's final commit whose connection is killed (pg_terminate_backend) while it waits in the database: read back, applied once; answered 200 and stored once", async () => {
    // A lease far longer than the test: no renewal (also a commit) is in flight beside the final one.
    const [e, f] = [await replica(60_000), await replica(60_000)];
    const db = await connectAdmin();
    llm.script(reply.text('base'));
    const first = await e.api.say('base');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('kept once', { until: new Promise<void>((r) => (release = r)) }));
    const turn = e.api.say('the turn', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);

    // The header's row is locked: the final commit (commit_task, which locks it first) waits there, in flight.
    await db.query('BEGIN');
    await db.query(`SELECT 1 FROM ${SCHEMA}.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE`, [DEV_TENANT_ID, taskId]);
    release();
    const waiting = `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%commit_task%'`;
    let pids: number[] = [];
    await waitFor(async () => {
      pids = (await db.query<{ pid: number }>(waiting, [APPLICATION_NAME])).rows.map((r) => r.pid);
      expect(pids).toHaveLength(1);
    });
    const { rows } = await db.query<{ killed: boolean }>('SELECT pg_terminate_backend($1) AS killed', [pids[0]]);
    expect(rows[0].killed).toBe(true);
    // The replica saw the commit fail with its outcome unknown, and retries the same write (which
    // waits on the lock again) rather than answer 503 or guess.
    await waitFor(async () => expect(e.app.logs().some((l) => l.msg === 'state store did not answer a write; retrying the same write')).toBe(true));
    await db.query('ROLLBACK');

    const res = await turn;
    expect([res.status, res.body.content?.output]).toEqual([200, 'kept once']);
    llm.script(reply.text('next'));
    const next = await f.api.say('next', { task_id: taskId });
    expect(next.status).toBe(200);
    const seen = modelInput(llm.requests.at(-1)!.body);
    expect(seen.filter(([, c]) => c === 'the turn')).toHaveLength(1);
    expect(seen.filter(([, c]) => c === 'kept once')).toHaveLength(1);
    const task = await f.api.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed', 'Completed']);
    expect(task.body.requests[1].output).toBe('kept once');
    expect(await view.listRequests(DEV_TENANT_ID, taskId)).toHaveLength(3);
  }, 30_000);

  it("a turn's final commit that applied, its backend killed (pg_terminate_backend) before the answer arrived: read back, not written twice; answered 200 and stored once", async () => {
    // The replica reaches PostgreSQL through a proxy that can hold back the answer to a commit.
    const proxy = await startAnswerHolder(pg.port);
    try {
      const [e, f] = [await replica(60_000, proxy.port), await replica(60_000)];
      const db = await connectAdmin();
      llm.script(reply.text('base'));
      const first = await e.api.say('base');
      expect(first.status).toBe(200);
      const taskId = first.body.task_id;
      let release!: () => void;
      llm.script(reply.text('applied once', { until: new Promise<void>((r) => (release = r)) }));
      const turn = e.api.say('the applied turn', { task_id: taskId });
      await llm.waitForRequest(llm.requests.length);
      const before = (await view.getTask(DEV_TENANT_ID, taskId))!;

      proxy.holdNextAnswerTo('commit_task');
      release();
      const clientPort = await proxy.held;
      // The commit applied (the database has it) while its answer is held in the proxy.
      await waitFor(async () => expect((await view.getTask(DEV_TENANT_ID, taskId))?.version).toBeGreaterThan(before.version));
      const { rows } = await db.query<{ killed: boolean }>(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND client_port = $2`,
        [APPLICATION_NAME, clientPort],
      );
      expect(rows.map((r) => r.killed)).toEqual([true]);

      const res = await turn;
      expect([res.status, res.body.content?.output]).toEqual([200, 'applied once']);
      expect(e.app.logs().some((l) => l.msg === 'state store did not answer a write; retrying the same write')).toBe(true);
      llm.script(reply.text('next'));
      const next = await f.api.say('next', { task_id: taskId });
      expect(next.status).toBe(200);
      const seen = modelInput(llm.requests.at(-1)!.body);
      expect(seen.filter(([, c]) => c === 'the applied turn')).toHaveLength(1);
      expect(seen.filter(([, c]) => c === 'applied once')).toHaveLength(1);
      const task = await f.api.task(taskId);
      expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed', 'Completed']);
      expect(await view.listRequests(DEV_TENANT_ID, taskId)).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  }, 30_000);
});

/**
 * A loopback proxy in front of PostgreSQL that passes everything, except that once told to, it holds
 * back (and never passes) the server's answers on the connection whose next statement names
 * `marker`: the statement runs and commits, and the client hears nothing until the connection
 * closes. `held` resolves with that connection's port as PostgreSQL sees it (pg_stat_activity.client_port).
 */
async function startAnswerHolder(targetPort: number): Promise<TcpProxy & { holdNextAnswerTo(marker: string): void; held: Promise<number> }> {
  let marker: string | undefined;
  let onHeld!: (port: number) => void;
  const held = new Promise<number>((resolve) => (onHeld = resolve));
  const proxy = await startTcpProxy(targetPort, '127.0.0.1', {
    request(chunk, connection) {
      if (marker === undefined || !chunk.includes(marker)) return;
      marker = undefined;
      connection.tag = 'holding';
    },
    answer(_chunk, connection) {
      if (connection.tag !== 'holding') return 'pass';
      onHeld(connection.upstreamPort!);
      return 'swallow';
    },
  });
  return Object.assign(proxy, { holdNextAnswerTo: (m: string) => void (marker = m), held });
}

describe('v3 with a stored record that cannot be parsed', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let raw: Redis;
  const prefix = `${uniqueName('corrupt')}:`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    raw = new Redis(testRedisUrl());
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix }),
    });
  });
  afterAll(async () => {
    await t?.close();
    raw?.disconnect();
    await llm?.close();
  });

  it('answers 500 with an error_id that is logged, and leaves the record untouched for inspection', async () => {
    const api = v3Client(`${t.url}/Faulty/1`);
    llm.script(reply.text('fine'));
    const first = await api.say('hello');
    const keys = new RedisKeys(prefix, DEV_TENANT_ID);
    await raw.hset(keys.requests(first.body.task_id), '0', '{"requestId": not json');

    const read = await api.task(first.body.task_id);
    expect(read.status).toBe(500);
    expect(read.body.code).toBe('STATE_CORRUPT');
    expect(read.body.error_id).toEqual(expect.any(String));
    expect(t.logs().some((l) => l.error_id === read.body.error_id)).toBe(true);

    // A replica commits a turn from what it wrote itself (src/tasks/writer/task-cache.ts); another replica
    // reads the task first and meets the corrupt record: it refuses before calling the model.
    const replica = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix }),
    });
    const followOn = await v3Client(`${replica.url}/Faulty/1`)
      .say('again', { task_id: first.body.task_id })
      .finally(() => replica.close());
    expect(followOn.status).toBe(500);
    expect(followOn.body.code).toBe('STATE_CORRUPT');
    expect(llm.requests).toHaveLength(1);
    expect(await raw.hget(keys.requests(first.body.task_id), '0')).toBe('{"requestId": not json');
    expect(await raw.hlen(keys.requests(first.body.task_id))).toBe(1);
  });
});

describe('v3 when the process running a request dies', () => {
  let llm: FakeOpenAi;
  let child: ChildProcess | undefined;
  let t: TestApp | undefined;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await t?.close();
    await llm?.close();
  });

  it('a later follow-on is refused while the dead request’s lease holds, then closes it as abandoned and runs', async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh (npx tsc -p tsconfig.build.json)
    const dir = writeAgentDir({ 'faulty.yaml': AGENT });
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? '',
      TA_AUTH_MODE: 'dev',
      TA_HOST: '127.0.0.1',
      TA_LOG_LEVEL: 'warn',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: testRedisUrl(),
      TA_TASK_LEASE_MS: '1500',
    };
    child = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], { env, stdio: 'ignore' });
    const base = `http://127.0.0.1:${port}/Faulty/1`;
    for (let i = 0; i < 200; i++) {
      if ((await request(`${base}/health/live`).catch(() => undefined))?.status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const first = v3Client(base);
    llm.script(reply.text('first answer'), reply.hang());
    const created = await first.say('first');
    expect(created.status).toBe(200);
    const taskId = created.body.task_id;
    const doomed = first.say('this request dies with its process', { task_id: taskId }).catch((e: unknown) => e);
    await llm.waitForRequest(1);
    child.kill('SIGKILL');
    await doomed;

    // A new process on the same store (same default key prefix as the CLI's).
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_STATE_STORE: 'redis', TA_REDIS_URL: testRedisUrl() },
    });
    const api = v3Client(`${t.url}/Faulty/1`);
    const blocked = await api.say('too early', { task_id: taskId });
    expect(blocked.status).toBe(409);

    llm.script(reply.text('recovered'));
    let later = blocked;
    const deadline = Date.now() + 10_000;
    while (later.status === 409 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      later = await api.say('after the lease lapsed', { task_id: taskId });
    }
    expect(later.status).toBe(200);
    expect(later.body.content.output).toBe('recovered');
    const task = await api.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Failed', 'Completed']);
    expect(task.body.requests[1].error.code).toBe('ABANDONED');
    expect(task.body.requests[2].seq).toBe(2);
    // A process to start, a lease (plus the store clock's skew allowance) to lapse: more than Jest's 5 s on a busy machine.
  }, 20_000);
});
