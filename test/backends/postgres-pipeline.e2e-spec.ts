/**
 * The PostgreSQL store's pipelined lane (src/state/backends/postgres/postgres-pipeline.ts): commits
 * sent together on one connection, each its own transaction; a commit stalled on a row lock holds
 * only what was sent right behind it, and later commits go through the pool; a lane connection
 * killed under its statements fails them as a broken connection does, their outcomes read back.
 */
import { randomUUID } from 'node:crypto';
import { Client, ClientBase } from 'pg';
import { PIPELINE_MAX_HEAD_AGE_MS } from '../../src/state/backends/postgres/postgres-pipeline';
import { socketOf } from '../../src/state/backends/postgres/postgres-query-on';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { TaskRecord } from '../../src/state/state.entities';
import { StateStoreUnavailableError, VersionConflictError } from '../../src/state/state.errors';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { waitFor } from '../support/faults';
import { testPostgresUrl, uniqueName, uniqueSchema } from '../support/services';

const schema = uniqueSchema('ta_pipeline');
let admin: Client;
let locker: Client;

beforeAll(async () => {
  admin = new Client({ connectionString: testPostgresUrl() });
  locker = new Client({ connectionString: testPostgresUrl() });
  await Promise.all([admin.connect(), locker.connect()]);
  const store = new PostgresStateStore({ url: testPostgresUrl(), schema, sweepMs: 0 });
  await store.prepare();
  await store.close();
}, 60_000);
afterAll(async () => {
  await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await Promise.all([admin?.end(), locker?.end()]);
});

/** A store whose connections carry an application_name of their own, so the test can count and find them. */
async function laneStore(options: { statementTimeoutMs?: number } = {}): Promise<{ store: PostgresStateStore; name: string }> {
  const name = uniqueName('pipe').slice(0, 40);
  const url = `${testPostgresUrl()}?application_name=${name}`;
  const store = new PostgresStateStore({ url, schema, sweepMs: 0, poolMax: 4, statementTimeoutMs: 10_000, ...options });
  return { store, name };
}

/** Connections of `name` in pg_stat_activity. */
async function connections(name: string): Promise<number> {
  const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [name]);
  return rows[0].n;
}

/** The backends' pids of `name`'s connections, sorted. */
async function pids(name: string): Promise<number[]> {
  const { rows } = await admin.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid`, [name]);
  return rows.map((r: { pid: number }) => r.pid);
}

/** `n` created tasks of one tenant, and a store whose lane is connected (one pooled connection and the lane's). */
async function seeded(n: number): Promise<{ store: PostgresStateStore; name: string; tenant: string; tasks: TaskRecord[] }> {
  const { store, name } = await laneStore();
  const tenant = uniqueName('tenant');
  const tasks: TaskRecord[] = [];
  for (let i = 0; i < n; i++) {
    const task = makeTask(tenant);
    tasks.push(await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] }));
  }
  // The first commit started the lane's connection; it serves once it is up (and has SET its timeout).
  await waitFor(async () => expect(await connections(name)).toBe(2));
  await new Promise((r) => setTimeout(r, 200));
  return { store, name, tenant, tasks };
}

const followOn = (task: TaskRecord, seq = 1) => ({
  task: { ...task, requestCount: seq + 1, writeId: randomUUID() },
  expectedVersion: task.version,
  expectedWriteId: task.writeId,
  requests: [makeRequest(task, seq)],
});

/** Whether `p` has settled within `ms`. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return settled;
}

describe('PostgreSQL commits on the pipelined lane', () => {
  it('16 commits sent at once are each their own transaction: the stale one conflicts, the other 15 apply once', async () => {
    const { store, tenant, tasks } = await seeded(16);
    try {
      const writes = tasks.map((t, i) => (i === 7 ? { ...followOn(t), expectedVersion: t.version + 1 } : followOn(t)));
      const results = await Promise.allSettled(writes.map((w) => store.commit(tenant, w)));
      expect(results.map((r) => r.status)).toEqual(tasks.map((_, i) => (i === 7 ? 'rejected' : 'fulfilled')));
      expect((results[7] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
      for (const [i, t] of tasks.entries()) {
        const stored = await store.getTask(tenant, t.taskId);
        expect([stored?.version, stored?.writeId]).toEqual(i === 7 ? [1, t.writeId] : [2, writes[i].task.writeId]);
        expect(await store.listRequests(tenant, t.taskId)).toHaveLength(i === 7 ? 1 : 2);
      }
    } finally {
      await store.close();
    }
  });

  it('commits sent from separate callbacks of one turn of the event loop leave in one socket write', async () => {
    const { store, tenant, tasks } = await seeded(4);
    try {
      const lane = (store as unknown as { pool: { lane: { conn: { client: ClientBase } } } }).pool.lane.conn.client;
      const socket = socketOf(lane) as unknown as { _write(...a: unknown[]): void; _writev(...a: unknown[]): void };
      const writes = [jest.spyOn(socket, '_write'), jest.spyOn(socket, '_writev')];
      const written = () => writes.reduce((n, spy) => n + spy.mock.calls.length, 0);
      // Under load the callbacks of several sockets run in one turn of the loop (requests read,
      // model answers), each committing: here two such callbacks, two commits each.
      const commits = await new Promise<Promise<TaskRecord>[]>((resolve) => {
        const sent: Promise<TaskRecord>[] = [];
        setImmediate(() => sent.push(store.commit(tenant, followOn(tasks[0]!)), store.commit(tenant, followOn(tasks[1]!))));
        setImmediate(() => {
          sent.push(store.commit(tenant, followOn(tasks[2]!)), store.commit(tenant, followOn(tasks[3]!)));
          resolve(sent);
        });
      });
      for (const stored of await Promise.all(commits)) expect(stored.version).toBe(2);
      expect(written()).toBe(1);
      for (const t of tasks) expect(await store.listRequests(tenant, t.taskId)).toHaveLength(2);
    } finally {
      await store.close();
    }
  });

  it('a commit waiting on a row lock holds the commit sent right behind it on the lane; one sent later goes through the pool and is answered at once', async () => {
    const { store, tenant, tasks } = await seeded(3);
    const [a, b, c] = tasks;
    await locker.query('BEGIN');
    try {
      await locker.query(`SELECT 1 FROM ${schema}.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE`, [tenant, a.taskId]);
      // Sent in one tick: one write on the lane's connection, B queued behind A in its backend.
      const first = store.commit(tenant, followOn(a));
      const behind = store.commit(tenant, followOn(b));
      expect(await settledWithin(behind, 4 * PIPELINE_MAX_HEAD_AGE_MS)).toBe(false);
      // The lane's head is older than PIPELINE_MAX_HEAD_AGE_MS: C takes a pooled connection.
      const later = store.commit(tenant, followOn(c));
      expect(await settledWithin(later, 2000)).toBe(true);
      await expect(later).resolves.toMatchObject({ version: 2 });
      expect(await settledWithin(first, 0)).toBe(false);
      await locker.query('COMMIT');
      await expect(first).resolves.toMatchObject({ version: 2 });
      await expect(behind).resolves.toMatchObject({ version: 2 });
      for (const t of tasks) expect(await store.listRequests(tenant, t.taskId)).toHaveLength(2);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await store.close();
    }
  });

  it('a commit on the lane cancelled by the statement timeout fails alone: the one sent behind it applies, and the lane goes on', async () => {
    const { store: slow, name } = await laneStore({ statementTimeoutMs: 300 });
    const tenant = uniqueName('tenant');
    const tasks: TaskRecord[] = [];
    for (const task of [makeTask(tenant), makeTask(tenant), makeTask(tenant)]) tasks.push(await slow.commit(tenant, { task, expectedVersion: 0 }));
    await waitFor(async () => expect(await connections(name)).toBe(2));
    await new Promise((r) => setTimeout(r, 200));
    const backends = await pids(name);
    const [a, b, c] = tasks;
    await locker.query('BEGIN');
    try {
      await locker.query(`SELECT 1 FROM ${schema}.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE`, [tenant, a.taskId]);
      const [first, behind] = await Promise.allSettled([slow.commit(tenant, followOn(a, 0)), slow.commit(tenant, followOn(b, 0))]);
      await locker.query('ROLLBACK');
      expect(first).toMatchObject({ status: 'rejected', reason: expect.any(StateStoreUnavailableError) });
      expect(behind).toMatchObject({ status: 'fulfilled', value: { version: 2 } });
      expect(await slow.getTask(tenant, a.taskId)).toMatchObject({ version: 1 });
      // Not a broken connection: the lane is kept, and the next commit goes on it.
      await expect(slow.commit(tenant, followOn(c, 0))).resolves.toMatchObject({ version: 2 });
      expect(await pids(name)).toEqual(backends);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await slow.close();
    }
  });

  it("the lane's connection killed under two commits: both unavailable and sent (read back: not applied), then the same writes apply once", async () => {
    const { store, name, tenant, tasks } = await seeded(2);
    const [a, b] = tasks;
    await locker.query('BEGIN');
    try {
      await locker.query(`SELECT 1 FROM ${schema}.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE`, [tenant, a.taskId]);
      const writes = [followOn(a), followOn(b)];
      const pending = writes.map((w) => store.commit(tenant, w).catch((e: unknown) => e));
      await waitFor(async () => {
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [name]);
        expect(rows[0].n).toBe(1);
      });
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [name]);
      const errors = await Promise.all(pending);
      await locker.query('ROLLBACK');
      for (const err of errors) {
        expect(err).toBeInstanceOf(StateStoreUnavailableError);
        expect(err).toMatchObject({ unsent: false });
      }
      for (const [i, t] of tasks.entries()) {
        const read = await store.getTask(tenant, t.taskId);
        expect([read?.version, read?.writeId]).toEqual([1, t.writeId]);
        await expect(store.commit(tenant, writes[i])).resolves.toMatchObject({ version: 2, writeId: writes[i].task.writeId });
        expect(await store.listRequests(tenant, t.taskId)).toHaveLength(2);
      }
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await store.close();
    }
  });

  it('with pipeline false (TA_POSTGRES_PIPELINE=false) every commit takes a pooled connection: a commit on a locked row holds only its own', async () => {
    const name = uniqueName('nopipe').slice(0, 40);
    const store = new PostgresStateStore({ url: `${testPostgresUrl()}?application_name=${name}`, schema, sweepMs: 0, poolMax: 4, pipeline: false });
    const tenant = uniqueName('tenant');
    const [a, b] = [makeTask(tenant), makeTask(tenant)];
    const stored = [await store.commit(tenant, { task: a, expectedVersion: 0 }), await store.commit(tenant, { task: b, expectedVersion: 0 })];
    await locker.query('BEGIN');
    try {
      await locker.query(`SELECT 1 FROM ${schema}.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE`, [tenant, a.taskId]);
      const first = store.commit(tenant, followOn(stored[0], 0));
      const second = store.commit(tenant, followOn(stored[1], 0));
      expect(await settledWithin(second, 2000)).toBe(true);
      await expect(second).resolves.toMatchObject({ version: 2 });
      expect(await connections(name)).toBeLessThanOrEqual(4);
      await locker.query('COMMIT');
      await expect(first).resolves.toMatchObject({ version: 2 });
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await store.close();
    }
  });
});
