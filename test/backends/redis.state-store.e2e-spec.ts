import Redis from 'ioredis';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { archiveIndexKey, RedisKeys } from '../../src/state/backends/redis/redis-keys';
import { StateCorruptError } from '../../src/state/state.errors';
import { describeStateStoreConformance } from '../conformance/state-store.conformance';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { testRedisUrl, uniqueName } from '../support/services';

// Every key of this file starts with its own prefix, so it shares the run's Redis with other files.
const prefix = `${uniqueName('ta-test')}:`;
let raw: Redis;
const newStore = () => new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix });

beforeAll(() => {
  raw = new Redis(testRedisUrl());
});
afterAll(() => raw.disconnect());

describeStateStoreConformance('redis', {
  createStore: async () => newStore(),
  createArchiveStore: async () => new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix, archiveIndex: true }),
  rawRequest: async (tenantId, taskId, seq) => (await raw.hget(new RedisKeys(prefix, tenantId).requests(taskId), String(seq))) ?? undefined,
  countStored: async (tenantId) => countKeys(raw, new RedisKeys(prefix, tenantId).tenantPattern),
});

/** Every key matching `pattern`, counted with SCAN (never KEYS). */
async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    n += keys.length;
    cursor = next;
  } while (cursor !== '0');
  return n;
}

describe('RedisStateStore', () => {
  let store: RedisStateStore;
  beforeAll(() => {
    store = newStore();
  });
  afterAll(() => store.close());

  async function seeded() {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    return { tenant, task, request, keys: new RedisKeys(prefix, tenant) };
  }

  it('reports an unparseable header as StateCorruptError and leaves it untouched', async () => {
    const { tenant, task, keys } = await seeded();
    await raw.hset(keys.task(task.taskId), 'data', '{"taskId": garbage');

    const err = await store.getTask(tenant, task.taskId).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(StateCorruptError);
    expect(err).toMatchObject({ code: 'STATE_CORRUPT', key: keys.task(task.taskId) });
    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 5 })).rejects.toBeInstanceOf(StateCorruptError);
    expect(await raw.hget(keys.task(task.taskId), 'data')).toBe('{"taskId": garbage');
  });

  it('reports an unparseable request record, and a key of the wrong type, as StateCorruptError', async () => {
    const { tenant, task, request, keys } = await seeded();
    await raw.hset(keys.requests(task.taskId), '0', 'not json');
    await raw.set(keys.requestIndex(request.requestId), '[1,2]');

    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.getRequest(tenant, request.requestId)).rejects.toBeInstanceOf(StateCorruptError);
    expect(await raw.hget(keys.requests(task.taskId), '0')).toBe('not json');

    // A string where the header hash should be: reads and the commit refuse, and nothing is written.
    const other = makeTask(tenant);
    await raw.set(keys.task(other.taskId), 'garbage');
    await expect(store.getTask(tenant, other.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    const write = { task: other, expectedVersion: 0, requests: [makeRequest(other, 0)] };
    await expect(store.commit(tenant, write)).rejects.toBeInstanceOf(StateCorruptError);
    expect(await raw.get(keys.task(other.taskId))).toBe('garbage');
    expect(await raw.exists(keys.requests(other.taskId), keys.requestIds(other.taskId))).toBe(0);
  });

  it('keeps the archive index as a sorted set of header keys scored in whole microseconds of the server clock, only when asked to', async () => {
    const archive = new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix, archiveIndex: true });
    try {
      const { tenant, task, keys } = await seeded();
      expect(await raw.zscore(archiveIndexKey(prefix), keys.task(task.taskId))).toBeNull();

      await archive.commit(tenant, { task, expectedVersion: 1 });
      const score = await raw.zscore(archiveIndexKey(prefix), keys.task(task.taskId));
      // All 16 digits (Lua would have printed so large a number as 1.7642912345671e+15).
      expect(score).toMatch(/^\d{16}$/);
      const listed = (await archive.listUnarchived(Date.now() + 3_600_000, { limit: 1000 })).items.filter((e) => e.tenantId === tenant);
      expect(listed).toEqual([{ tenantId: tenant, taskId: task.taskId, version: 2, changedAt: Math.floor(Number(score) / 1000) }]);
    } finally {
      await archive.close();
    }
  });

  it('keeps an Idempotency-Key entry as a string key expiring at its expiresAt; Redis still holding an expired one does not make it live', async () => {
    const tenant = uniqueName('tenant');
    const keys = new RedisKeys(prefix, tenant);
    const task = makeTask(tenant);
    const now = store.now();
    const entry = { key: 'k:{1}', fingerprint: 'f1', operation: 'turn', taskId: task.taskId, createdAt: now, expiresAt: now + 60_000.5 };
    await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry });
    expect(JSON.parse((await raw.get(keys.idempotency(entry.key)))!)).toEqual(entry);
    // Whole ms, rounded up: never removed before it has expired.
    expect(await raw.pexpiretime(keys.idempotency(entry.key))).toBe(Math.ceil(entry.expiresAt));

    // Expired by the store's clock while Redis (whose clock may lag) still holds it: missing, and claimable.
    const stale = { ...entry, expiresAt: store.now() - 1 };
    await raw.set(keys.idempotency(entry.key), JSON.stringify(stale), 'PX', 60_000);
    expect(await store.getIdempotencyEntry(tenant, entry.key)).toBeUndefined();
    const again = { ...entry, fingerprint: 'f2' };
    await store.commit(tenant, { task: { ...task, status: 'Completed' }, expectedVersion: 1, idempotency: again });
    expect(await store.getIdempotencyEntry(tenant, entry.key)).toEqual(again);
  });

  it('reports an unparseable Idempotency-Key entry, or one of the wrong type, as StateCorruptError; a commit claiming it writes nothing', async () => {
    const { tenant, task, keys } = await seeded();
    const now = store.now();
    const entry = { key: 'k1', fingerprint: 'f1', operation: 'cancel', taskId: task.taskId, createdAt: now, expiresAt: now + 60_000 };
    for (const corrupt of ['{"key": garbage', '{"key":"k1"}']) {
      await raw.set(keys.idempotency(entry.key), corrupt);
      await expect(store.getIdempotencyEntry(tenant, entry.key)).rejects.toMatchObject({ code: 'STATE_CORRUPT', key: keys.idempotency(entry.key) });
      const err = await store.commit(tenant, { task: { ...task, status: 'Canceled' }, expectedVersion: 1, idempotency: entry }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StateCorruptError);
      expect(await raw.get(keys.idempotency(entry.key))).toBe(corrupt);
    }
    await raw.del(keys.idempotency(entry.key));
    await raw.hset(keys.idempotency(entry.key), 'x', '1');
    await expect(store.getIdempotencyEntry(tenant, entry.key)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.commit(tenant, { task, expectedVersion: 1, idempotency: entry })).rejects.toBeInstanceOf(StateCorruptError);
    expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 1, status: task.status });
  });

  it('expires every key of a task no earlier than the task, re-expiring them only when the horizon moves', async () => {
    const tenant = uniqueName('tenant');
    const keys = new RedisKeys(prefix, tenant);
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    const task = makeTask(tenant, { expiresAt: at(60_000) });
    const r0 = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [r0] });
    const all = () => [
      keys.task(task.taskId),
      keys.requests(task.taskId),
      keys.requestIds(task.taskId),
      keys.requestIndex(r0.requestId),
      keys.session(task.ownerId, task.sessionId),
    ];
    const expiries = async (names: string[]) => Promise.all(names.map((k) => raw.pexpiretime(k)));

    const first = await expiries(all());
    for (const t of first) expect(t).toBeGreaterThanOrEqual(Date.parse(task.expiresAt!));

    // Within the horizon: the old request's index key keeps its expiry.
    const r1 = makeRequest(task, 1);
    await store.commit(tenant, { task: { ...task, expiresAt: at(70_000) }, expectedVersion: 1, requests: [r1] });
    expect(await raw.pexpiretime(keys.requestIndex(r0.requestId))).toBe(first[3]);
    expect(await raw.pexpiretime(keys.requestIndex(r1.requestId))).toBe(first[3]);

    // Past the horizon: everything moves.
    const later = at(600_000);
    await store.commit(tenant, { task: { ...task, expiresAt: later }, expectedVersion: 2 });
    for (const t of await expiries([...all(), keys.requestIndex(r1.requestId)])) expect(t).toBeGreaterThanOrEqual(Date.parse(later));

    // No expiry any more: nothing expires.
    await store.commit(tenant, { task: { ...task, expiresAt: undefined }, expectedVersion: 3 });
    expect(await expiries([...all(), keys.requestIndex(r1.requestId)])).toEqual([-1, -1, -1, -1, -1, -1]);
  });
});
