import { isoAt, makeRequest, makeTask } from '../../../../test/conformance/fixtures';
import { TaskRecord } from '../../state.entities';
import { MemoryStateStore } from './memory.state-store';

const past = () => new Date(Date.now() - 1000).toISOString();
const future = () => new Date(Date.now() + 3_600_000).toISOString();
const TENANT = 'tenant-a';

/** A task with `requests` requests and a stream log, committed as one write. */
async function seed(store: MemoryStateStore, overrides: Partial<TaskRecord>, requests = 3): Promise<TaskRecord> {
  const task = makeTask(TENANT, overrides);
  const stored = await store.commit(TENANT, {
    task: { ...task, expiresAt: future() },
    expectedVersion: 0,
    requests: Array.from({ length: requests }, (_, seq) => makeRequest(task, seq)),
  });
  await store.appendStreamEvents(TENANT, task.taskId, requests - 1, [{ n: 0, event: 'partial-response', data: { x: 1 } }]);
  // The last write sets the expiry asked for (in the past: it has expired).
  return store.commit(TENANT, { task: { ...stored, ...overrides }, expectedVersion: stored.version });
}

describe('MemoryStateStore: expired tasks are removed, not only hidden', () => {
  let store: MemoryStateStore;
  beforeEach(() => (store = new MemoryStateStore({ sweepIntervalMs: 0, sweepSliceSize: 10 })));
  afterEach(() => store.close());

  it('the sweep removes an expired task with its requests, index entries, session entries and stream log', async () => {
    const live = await seed(store, { ownerId: 'bob', sessionId: 'kept', expiresAt: future() });
    const liveCount = store.storedCount(TENANT);
    await seed(store, { ownerId: 'alice', sessionId: 'gone', expiresAt: past() });
    expect(store.storedCount(TENANT)).toBeGreaterThan(liveCount);

    expect(store.sweep()).toBe(1);

    expect(store.storedCount(TENANT)).toBe(liveCount);
    expect(await store.getTask(TENANT, live.taskId)).toEqual(live);
    expect((await store.listOwnerSessions(TENANT, 'alice', { limit: 10 })).items).toEqual([]);
    expect((await store.listOwnerSessions(TENANT, 'bob', { limit: 10 })).items).toEqual(['kept']);
  });

  it('examines at most a slice per call and goes on from there; a full pass leaves nothing expired', async () => {
    // 12 expired tasks of 3 requests: each removal costs 4 of a slice of 10, so 3 per slice at most.
    for (let i = 0; i < 12; i++) await seed(store, { sessionId: `s${i}`, expiresAt: past() });
    const perSlice: number[] = [];
    for (let n = store.sweep(); n > 0; n = store.sweep()) perSlice.push(n);

    expect(Math.max(...perSlice)).toBeLessThanOrEqual(3);
    expect(perSlice.reduce((a, b) => a + b, 0)).toBe(12);
    expect(store.storedCount(TENANT)).toBe(0);
  });

  it('a task that expires during a pass is removed by the next one', async () => {
    const task = await seed(store, { expiresAt: future() });
    expect(store.sweep()).toBe(0);
    expect(store.sweep(Date.parse(task.expiresAt!) + 1)).toBe(1);
    expect(store.storedCount(TENANT)).toBe(0);
  });

  it('a read that meets an expired task removes it on the spot', async () => {
    const task = await seed(store, { expiresAt: past() });
    expect(await store.getTask(TENANT, task.taskId)).toBeUndefined();
    expect(store.storedCount(TENANT)).toBe(0);
  });

  it('listing a session removes the expired tasks it meets', async () => {
    const kept = await seed(store, { sessionId: 's', createdAt: isoAt(0), expiresAt: future() });
    const liveCount = store.storedCount(TENANT);
    await seed(store, { sessionId: 's', createdAt: isoAt(1), expiresAt: past() });

    expect((await store.listSessionTasks(TENANT, kept.ownerId, 's', { limit: 10 })).items).toEqual([kept]);
    expect(store.storedCount(TENANT)).toBe(liveCount);
  });

  it('re-creating an expired task id drops the old requests from the index first', async () => {
    const old = await seed(store, { sessionId: 'old', expiresAt: past() });
    const fresh = await store.commit(TENANT, { task: makeTask(TENANT, { taskId: old.taskId, sessionId: 'new' }), expectedVersion: 0 });

    // The fresh task with no requests: its header and its session entry, nothing of the old one.
    expect(store.storedCount(TENANT)).toBe(2);
    expect((await store.listOwnerSessions(TENANT, fresh.ownerId, { limit: 10 })).items).toEqual(['new']);
  });

  it("runs on its own on an unref'd timer, which close() stops", async () => {
    const timed = new MemoryStateStore({ sweepIntervalMs: 20 });
    try {
      await seed(timed, { expiresAt: new Date(Date.now() + 50).toISOString() });
      for (let i = 0; i < 100 && timed.storedCount(TENANT) > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(timed.storedCount(TENANT)).toBe(0);
    } finally {
      await timed.close();
    }
  });
});
