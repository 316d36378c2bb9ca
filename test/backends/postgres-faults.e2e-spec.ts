import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { APPLICATION_NAME, PostgresStateStore, PostgresStateStoreOptions } from '../../src/state/backends/postgres/postgres.state-store';
import { StateStore } from '../../src/state/state-store';
import { StateStoreUnavailableError, VersionConflictError } from '../../src/state/state.errors';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { outcomesOf, waitFor } from '../support/faults';
import { PostgresServerHandle, startPostgresServer, uniqueName } from '../support/services';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';

/** Every method of the contract, each as one call against a task that exists while PostgreSQL is up. */
function everyMethod(store: StateStore, tenant: string, task: ReturnType<typeof makeTask>, requestId: string) {
  return {
    getTask: () => store.getTask(tenant, task.taskId),
    listRequests: () => store.listRequests(tenant, task.taskId),
    getRequest: () => store.getRequest(tenant, requestId),
    listSessionTasks: () => store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 }),
    listOwnerSessions: () => store.listOwnerSessions(tenant, task.ownerId, { limit: 10 }),
    listLapsedLeases: () => store.listLapsedLeases(Date.now(), { limit: 10 }),
    readStreamEvents: () => store.readStreamEvents(tenant, task.taskId, 0, -1),
    getIdempotencyEntry: () => store.getIdempotencyEntry(tenant, `k-${task.taskId}`),
    commit: () => store.commit(tenant, { task, expectedVersion: 1 }),
    ping: () => store.ping(),
  };
}

// Its own PostgreSQL, so stopping it disturbs no other test file.
describe('PostgresStateStore when PostgreSQL goes away', () => {
  let server: PostgresServerHandle;
  let proxy: TcpProxy;
  let admin: Client;
  const tenant = uniqueName('tenant');
  const stores: PostgresStateStore[] = [];
  /** A store of its own; `viaProxy`: connected through the proxy, which can stall it. */
  const storeOf = async (options: Partial<PostgresStateStoreOptions> & { viaProxy?: boolean } = {}) => {
    const port = options.viaProxy ? proxy.port : server.port;
    const store = new PostgresStateStore({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, schema: 'faults', sweepMs: 0, ...options });
    stores.push(store);
    await store.ping();
    return store;
  };

  beforeAll(async () => {
    server = await startPostgresServer();
    proxy = await startTcpProxy(server.port);
    admin = new Client({ connectionString: server.url });
    admin.on('error', () => undefined);
    await admin.connect();
    const first = new PostgresStateStore({ url: server.url, schema: 'faults', sweepMs: 0 });
    await first.prepare();
    await first.close();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await admin?.end().catch(() => undefined);
    await proxy?.close();
    await server?.stop();
  });

  it('stopped (pg_ctl stop -m immediate): every method fails fast with StateStoreUnavailableError, never sent; after a restart it works, data kept', async () => {
    const store = await storeOf({ acquireTimeoutMs: 1000 });
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    await admin.end();
    await server.halt('immediate');

    for (const { name, error, ms } of await outcomesOf(everyMethod(store, tenant, task, request.requestId), 'PostgreSQL')) {
      expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
      expect([name, ms < 3000]).toEqual([name, true]);
    }
    // Refused connections: nothing was sent, so a write certainly did not apply.
    const refused = await store.commit(tenant, { task, expectedVersion: 1 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'STATE_STORE_UNAVAILABLE', unsent: true });

    await server.start();
    admin = new Client({ connectionString: server.url });
    admin.on('error', () => undefined);
    await admin.connect();
    await waitFor(() => store.ping());
    expect(await store.getRequest(tenant, request.requestId)).toEqual(request);
    await expect(store.commit(tenant, { task, expectedVersion: 1 })).resolves.toMatchObject({ version: 2 });
  }, 60_000);

  it('a stalled connection (no answers): every method fails within a bounded time, then works once it answers again', async () => {
    const store = await storeOf({ viaProxy: true, acquireTimeoutMs: 500, statementTimeoutMs: 500 });
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    proxy.hold();
    try {
      for (const { name, error, ms } of await outcomesOf(everyMethod(store, tenant, task, request.requestId), 'PostgreSQL')) {
        expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
        expect([name, ms < 3000]).toEqual([name, true]);
      }
    } finally {
      proxy.release();
    }
    await waitFor(() => store.ping());
    expect(await store.getRequest(tenant, request.requestId)).toEqual(request);
  }, 30_000);

  it('pool exhaustion (200 calls, a pool of 5, every connection held): each completes or is unavailable within the acquire timeout; no connection leaks', async () => {
    const acquireTimeoutMs = 400;
    // Its connections named apart (the connection string's application_name wins), to count them.
    const url = `postgres://postgres@127.0.0.1:${server.port}/postgres?application_name=faults-pool`;
    // Every commit on a pooled connection (no pipelined lane): this is the pool's bound.
    const store = await storeOf({ url, poolMax: 5, acquireTimeoutMs, statementTimeoutMs: 10_000, pipeline: false });
    const task = makeTask(tenant);
    await store.commit(tenant, { task, expectedVersion: 0 });
    // Five commits wait on the header's row lock, holding every pooled connection.
    const locker = new Client({ connectionString: server.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM faults.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE', [tenant, task.taskId]);
    const writes = Array.from({ length: 5 }, (_, i) => store.commit(tenant, { task: { ...task, metadata: { writer: String(i) } }, expectedVersion: 1 }));
    await waitFor(async () => expect(await waitingOnLocks()).toBe(5));
    // Released half-way through the 200: the later calls find connections again.
    setTimeout(() => void locker.query('COMMIT'), 1000);

    const started = Date.now();
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 10));
        const at = Date.now();
        return store.getTask(tenant, task.taskId).then(
          () => ({ ok: true, ms: Date.now() - at }),
          (error: unknown) => ({ ok: false, error, ms: Date.now() - at }),
        );
      }),
    );
    await locker.end();

    const failed = outcomes.filter((o) => !o.ok);
    expect(failed.length).toBeGreaterThan(0); // some waited out the bound while every connection was held...
    expect(outcomes.filter((o) => o.ok).length).toBeGreaterThan(0); // ...and the later ones were served
    for (const f of failed) expect(f).toMatchObject({ error: expect.any(StateStoreUnavailableError) });
    expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(acquireTimeoutMs + 1000);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The five waiting commits: exactly one applied, the others lost the compare-and-set.
    const results = await Promise.allSettled(writes);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(VersionConflictError);
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'faults-pool'`);
    expect(rows[0].n).toBeLessThanOrEqual(5);
  }, 30_000);

  it('a statement slower than TA_POSTGRES_STATEMENT_TIMEOUT_MS is cancelled by the server: unavailable, nothing written, the connection reused', async () => {
    const store = await storeOf({ poolMax: 1, statementTimeoutMs: 300 });
    const task = makeTask(tenant);
    await store.commit(tenant, { task, expectedVersion: 0 });
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM faults.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE', [tenant, task.taskId]);
    const at = Date.now();
    const err = await store.commit(tenant, { task, expectedVersion: 1 }).catch((e: unknown) => e);
    await admin.query('ROLLBACK');
    expect(err).toBeInstanceOf(StateStoreUnavailableError);
    expect(Date.now() - at).toBeLessThan(1300);
    expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 1 });
  });

  it('a backend killed mid-commit (pg_terminate_backend): the commit is unavailable, and reading back shows it did not apply; the same write then applies once', async () => {
    const store = await storeOf();
    const task = makeTask(tenant);
    await store.commit(tenant, { task, expectedVersion: 0 });
    const write = { task: { ...task, writeId: randomUUID() }, expectedVersion: 1, requests: [makeRequest(task, 0)] };
    // The commit waits on the header's row lock, where it is killed.
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM faults.tasks WHERE tenant_id = $1 AND task_id = $2 FOR UPDATE', [tenant, task.taskId]);
    const pending = store.commit(tenant, write).catch((e: unknown) => e);
    await waitFor(async () => expect(await waitingOnLocks()).toBe(1));
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [APPLICATION_NAME]);
    const err = await pending;
    await admin.query('ROLLBACK');

    expect(err).toBeInstanceOf(StateStoreUnavailableError);
    expect(err).toMatchObject({ unsent: false }); // sent: its outcome is read back, not guessed
    const read = await store.getTask(tenant, task.taskId);
    expect(read).toMatchObject({ version: 1 });
    expect(read?.writeId).toBeUndefined();
    await expect(store.commit(tenant, write)).resolves.toMatchObject({ version: 2, writeId: write.task.writeId });
    expect(await store.listRequests(tenant, task.taskId)).toEqual(write.requests);
  });

  it('a commit whose answer is lost after it applied: unavailable, reading back shows its writeId, and a retry is a conflict (no second write)', async () => {
    const cutter = await startAnswerCutter(server.port);
    const store = new PostgresStateStore({ url: `postgres://postgres@127.0.0.1:${cutter.port}/postgres`, schema: 'faults', sweepMs: 0, poolMax: 1 });
    stores.push(store);
    try {
      const task = makeTask(tenant);
      await store.commit(tenant, { task, expectedVersion: 0 });
      const write = { task: { ...task, writeId: randomUUID() }, expectedVersion: 1, requests: [makeRequest(task, 0)] };
      cutter.cutNextAnswer();
      const err = await store.commit(tenant, write).catch((e: unknown) => e);

      expect(err).toBeInstanceOf(StateStoreUnavailableError);
      expect(err).toMatchObject({ unsent: false });
      expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 2, writeId: write.task.writeId });
      const retry = await store.commit(tenant, write).catch((e: unknown) => e);
      expect(retry).toBeInstanceOf(VersionConflictError);
      expect(await store.listRequests(tenant, task.taskId)).toEqual(write.requests);
    } finally {
      await cutter.close();
    }
  });

  it('a commit claiming an Idempotency-Key whose answer is lost after it applied: the retry of the same write is a conflict, not a twin taking the key', async () => {
    const cutter = await startAnswerCutter(server.port);
    const store = new PostgresStateStore({ url: `postgres://postgres@127.0.0.1:${cutter.port}/postgres`, schema: 'faults', sweepMs: 0, poolMax: 1 });
    stores.push(store);
    try {
      const task = makeTask(tenant);
      await store.commit(tenant, { task, expectedVersion: 0 });
      const now = store.now();
      const entry = { key: `k-${randomUUID()}`, fingerprint: 'f1', operation: 'turn', taskId: task.taskId, createdAt: now, expiresAt: now + 60_000 };
      const write = { task: { ...task, writeId: randomUUID() }, expectedVersion: 1, requests: [makeRequest(task, 0)], idempotency: entry };
      cutter.cutNextAnswer();
      const err = await store.commit(tenant, write).catch((e: unknown) => e);

      expect(err).toMatchObject({ code: 'STATE_STORE_UNAVAILABLE', unsent: false });
      expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 2, writeId: write.task.writeId });
      expect(await store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
      const retry = await store.commit(tenant, write).catch((e: unknown) => e);
      expect(retry).toBeInstanceOf(VersionConflictError);
    } finally {
      await cutter.close();
    }
  });

  /** Backends of the store waiting on a lock. */
  async function waitingOnLocks(): Promise<number> {
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND wait_event_type = 'Lock'`);
    return rows[0].n;
  }
});

/**
 * A loopback proxy that passes everything, except that once armed it drops the connection that
 * carries the server's next answer instead of passing it on: the statement ran and committed, and
 * the client never hears of it (as when a network fails at that moment).
 */
async function startAnswerCutter(targetPort: number): Promise<TcpProxy & { cutNextAnswer(): void }> {
  let armed = false;
  const answer = (): 'pass' | 'cut' => {
    if (!armed) return 'pass';
    armed = false;
    return 'cut';
  };
  return Object.assign(await startTcpProxy(targetPort, '127.0.0.1', { answer }), { cutNextAnswer: () => void (armed = true) });
}
