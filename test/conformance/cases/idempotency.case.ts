import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdempotencyEntry } from '../../../src/state/state.entities';
import { IdempotencyKeyTakenError, VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';

/** An entry for `taskId` under a fresh key, live for `ttlMs` by the store's clock. */
function entryFor(store: { now(): number }, taskId: string, overrides: Partial<IdempotencyEntry> = {}, ttlMs = 60_000): IdempotencyEntry {
  const now = store.now();
  return {
    key: `k-${randomUUID()}`,
    fingerprint: 'f1',
    operation: 'turn',
    taskId,
    requestId: `req-${randomUUID()}`,
    createdAt: now,
    expiresAt: now + ttlMs,
    ...overrides,
  };
}

export const idempotencyCases: ConformanceCases = (ctx) => {
  describe('idempotency keys (TaskWrite.idempotency, getIdempotencyEntry)', () => {
    it('a commit stores its claim with the write; the entry reads back as stored', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const entry = entryFor(ctx.store, task.taskId);
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toBeUndefined();
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry });
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
      // An update may claim a key as well.
      const second = entryFor(ctx.store, task.taskId, { operation: 'cancel' });
      delete second.requestId;
      await ctx.store.commit(tenant, { task: { ...task, status: 'Canceled' }, expectedVersion: 1, idempotency: second });
      expect(await ctx.store.getIdempotencyEntry(tenant, second.key)).toEqual(second);
    });

    it('a commit whose key a live entry holds writes nothing and fails with IdempotencyKeyTakenError carrying the stored entry', async () => {
      const tenant = ctx.tenant();
      const first = makeTask(tenant);
      const entry = entryFor(ctx.store, first.taskId);
      await ctx.store.commit(tenant, { task: first, expectedVersion: 0, requests: [makeRequest(first, 0)], idempotency: entry });

      // A create of another task under the same key.
      const twin = makeTask(tenant, { sessionId: 'session-twin' });
      const twinRequest = makeRequest(twin, 0);
      const err = await ctx.store
        .commit(tenant, { task: twin, expectedVersion: 0, requests: [twinRequest], idempotency: { ...entry, taskId: twin.taskId, fingerprint: 'f2' } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IdempotencyKeyTakenError);
      expect((err as IdempotencyKeyTakenError).entry).toEqual(entry);
      expect(await ctx.store.getTask(tenant, twin.taskId)).toBeUndefined();
      expect(await ctx.store.getRequest(tenant, twinRequest.requestId)).toBeUndefined();
      expect((await ctx.store.listSessionTasks(tenant, twin.ownerId, 'session-twin', { limit: 10 })).items).toEqual([]);

      // An update of the first task under the same key: the version matches, the key does not let it through.
      const update = await ctx.store
        .commit(tenant, { task: { ...first, status: 'Completed' }, expectedVersion: 1, idempotency: { ...entry, operation: 'cancel' } })
        .catch((e: unknown) => e);
      expect(update).toBeInstanceOf(IdempotencyKeyTakenError);
      expect(await ctx.store.getTask(tenant, first.taskId)).toEqual(storedAs(first, 0));
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
    });

    it('a commit that loses its compare-and-set fails with VersionConflictError and stores no claim, whatever the key holds', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const held = entryFor(ctx.store, task.taskId);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: held });

      const fresh = entryFor(ctx.store, task.taskId);
      const stale = await ctx.store.commit(tenant, { task, expectedVersion: 5, idempotency: fresh }).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(VersionConflictError);
      expect(await ctx.store.getIdempotencyEntry(tenant, fresh.key)).toBeUndefined();
      // The version check comes first also when the key is held.
      const both = await ctx.store.commit(tenant, { task, expectedVersion: 0, idempotency: held }).catch((e: unknown) => e);
      expect(both).toBeInstanceOf(VersionConflictError);
    });

    it('of many commits claiming one key at once (separate instances, separate tasks), exactly one is stored', async () => {
      const tenant = ctx.tenant();
      const stores = await ctx.stores(3);
      const key = `k-${randomUUID()}`;
      const attempts = Array.from({ length: 12 }, (_, i) => {
        const task = makeTask(tenant, { sessionId: `s-${i}` });
        const store = stores[i % stores.length]!;
        const entry = entryFor(store, task.taskId, { key });
        return store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry }).then(
          () => ({ won: task.taskId }),
          (err: unknown) => ({ err }),
        );
      });
      const outcomes = await Promise.all(attempts);
      const winners = outcomes.filter((o): o is { won: string } => 'won' in o);
      expect(winners).toHaveLength(1);
      // Each loser names what it got, so a failure says which error it was, not only its class.
      for (const o of outcomes) if ('err' in o) expect(o.err instanceof IdempotencyKeyTakenError ? 'taken' : String(o.err)).toBe('taken');
      const stored = await ctx.store.getIdempotencyEntry(tenant, key);
      expect(stored?.taskId).toBe(winners[0]!.won);
      for (const o of outcomes) if ('err' in o) expect((o.err as IdempotencyKeyTakenError).entry.taskId).toBe(winners[0]!.won);
    });

    it('an expired entry reads as missing, and its key may be claimed again', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const entry = entryFor(ctx.store, task.taskId, {}, 400);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry });
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
      await sleep(1_200);
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toBeUndefined();

      const next = makeTask(tenant, { sessionId: 'session-2' });
      const again = entryFor(ctx.store, next.taskId, { key: entry.key, fingerprint: 'f2' });
      await ctx.store.commit(tenant, { task: next, expectedVersion: 0, requests: [makeRequest(next, 0)], idempotency: again });
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(again);
    }, 15_000);

    it('is per tenant, and outlives the deletion of its task', async () => {
      const tenant = ctx.tenant();
      const other = ctx.tenant();
      const task = makeTask(tenant);
      const entry = entryFor(ctx.store, task.taskId);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry });
      expect(await ctx.store.getIdempotencyEntry(other, entry.key)).toBeUndefined();
      // Another tenant claims the same key for itself.
      const theirs = makeTask(other);
      const theirEntry = { ...entry, taskId: theirs.taskId };
      await ctx.store.commit(other, { task: theirs, expectedVersion: 0, requests: [makeRequest(theirs, 0)], idempotency: theirEntry });
      expect(await ctx.store.getIdempotencyEntry(other, entry.key)).toEqual(theirEntry);
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);

      // Deleting the task (marked, then batched away) leaves the entry.
      await ctx.store.commit(tenant, { task: { ...task, deletingAt: new Date().toISOString() }, expectedVersion: 1 });
      while (!(await ctx.store.deleteTaskBatch(tenant, task.taskId, 10)));
      expect(await ctx.store.getTask(tenant, task.taskId)).toBeUndefined();
      expect(await ctx.store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
    });
  });
};
