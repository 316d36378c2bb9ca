import Redis from 'ioredis';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { outcomesOf, waitFor } from '../support/faults';
import { RedisServerHandle, startRedisServer, uniqueName } from '../support/services';

/** Every method of the contract, each as one call against a task that exists while Redis is up. */
function everyMethod(store: StateStore, tenant: string, task: ReturnType<typeof makeTask>, requestId: string) {
  return {
    getTask: () => store.getTask(tenant, task.taskId),
    listRequests: () => store.listRequests(tenant, task.taskId),
    getRequest: () => store.getRequest(tenant, requestId),
    listSessionTasks: () => store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 }),
    commit: () => store.commit(tenant, { task, expectedVersion: 1 }),
    ping: () => store.ping(),
  };
}

// Its own redis-server, so stopping it disturbs no other test file.
describe('RedisStateStore when Redis goes away', () => {
  let server: RedisServerHandle;
  let store: RedisStateStore;
  const tenant = uniqueName('tenant');
  const task = makeTask(tenant);
  const request = makeRequest(task, 0);

  beforeAll(async () => {
    server = await startRedisServer();
    store = new RedisStateStore({ url: server.url, keyPrefix: 'faults:' });
  });
  afterAll(async () => {
    await store.close();
    await server.stop();
  });

  it('rejects every method with StateStoreUnavailableError within a bounded time, and heals after a restart', async () => {
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    await server.stop();

    for (const { name, error, ms } of await outcomesOf(everyMethod(store, tenant, task, request.requestId), 'Redis')) {
      expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
      expect([name, ms < 3000]).toEqual([name, true]);
    }

    // The data died with the server (no persistence); the store reconnects by itself.
    await server.start();
    await waitFor(() => store.ping());
    expect(await store.getTask(tenant, task.taskId)).toBeUndefined();
    await expect(store.commit(tenant, { task, expectedVersion: 0, requests: [request] })).resolves.toMatchObject({ version: 1 });
    expect(await store.getRequest(tenant, request.requestId)).toEqual(request);
  }, 30_000);

  it('a hung server (connection open, no replies): every method still fails within a bounded time', async () => {
    await waitFor(() => store.ping());
    const mine = makeTask(tenant);
    const stored = makeRequest(mine, 0);
    await store.commit(tenant, { task: mine, expectedVersion: 0, requests: [stored] });
    server.freeze();
    try {
      for (const { name, error, ms } of await outcomesOf(everyMethod(store, tenant, mine, stored.requestId), 'Redis')) {
        expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
        expect([name, ms < 3000]).toEqual([name, true]);
      }
    } finally {
      server.thaw();
    }
    await waitFor(() => store.ping());
    expect(await store.getRequest(tenant, stored.requestId)).toEqual(stored);
  }, 30_000);
});

// Its own redis-server: CLIENT PAUSE stalls every client of the server.
describe('RedisStateStore reply timeouts for request records (unbounded in size)', () => {
  // The pause lies halfway between one timeout and the longer ones (three for 2 MiB sent, two for
  // a read of records), with half a timeout of margin on each side: enough for a machine whose
  // cores are busy with other test files to serialize and send 2 MiB, or to get round to a call.
  const TIMEOUT_MS = 1500;
  const PAUSE_MS = 1.5 * TIMEOUT_MS;
  let server: RedisServerHandle;
  let store: RedisStateStore;
  let admin: Redis;
  const tenant = uniqueName('tenant');

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    store = new RedisStateStore({ url: server.url, keyPrefix: 'bulk:', timeoutMs: TIMEOUT_MS });
    await waitFor(() => store.ping());
  });
  afterAll(async () => {
    admin.disconnect();
    await store.close();
    await server.stop();
  });

  it('a commit waits timeoutMs more per MiB it sends; a small one still fails after timeoutMs', async () => {
    const big = makeTask(tenant);
    const bigRequest = makeRequest(big, 0, { output: 'x'.repeat(2 * 1024 * 1024) });
    await admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    await expect(store.commit(tenant, { task: big, expectedVersion: 0, requests: [bigRequest] })).resolves.toMatchObject({ version: 1 });

    const small = makeTask(tenant);
    await admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE');
    await expect(store.commit(tenant, { task: small, expectedVersion: 0, requests: [makeRequest(small, 0)] })).rejects.toBeInstanceOf(
      StateStoreUnavailableError,
    );
  }, 30_000);

  it('a read of request records waits twice timeoutMs; a header read fails after timeoutMs', async () => {
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await admin.call('CLIENT', 'UNPAUSE');
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    await admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');
    const [records, header] = await Promise.allSettled([store.listRequests(tenant, task.taskId), store.getTask(tenant, task.taskId)]);
    expect(records).toEqual({ status: 'fulfilled', value: [request] });
    expect(header).toMatchObject({ status: 'rejected', reason: expect.any(StateStoreUnavailableError) });
  }, 30_000);
});
