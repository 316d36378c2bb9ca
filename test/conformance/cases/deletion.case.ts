import { TaskRecord } from '../../../src/state/state.entities';
import { StateStore } from '../../../src/state/state-store';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask } from '../fixtures';

/** Commits a task with `n` requests (in commits of at most 40, which every backend accepts); returns it at its stored version. */
async function seedTask(store: StateStore, tenant: string, n: number, overrides: Partial<TaskRecord> = {}) {
  const task = makeTask(tenant, overrides);
  const requests = Array.from({ length: n }, (_, seq) => makeRequest(task, seq));
  let stored = await store.commit(tenant, { task: { ...task, requestCount: Math.min(n, 40) }, expectedVersion: 0, requests: requests.slice(0, 40) });
  for (let from = 40; from < n; from += 40) {
    const next = { ...stored, requestCount: Math.min(n, from + 40) };
    stored = await store.commit(tenant, { task: next, expectedVersion: stored.version, requests: requests.slice(from, from + 40) });
  }
  return { task: stored, requests };
}

/** Marks the task for deletion, as the deletion service does: one compare-and-set. */
async function mark(store: StateStore, tenant: string, task: TaskRecord): Promise<TaskRecord> {
  return store.commit(tenant, { task: { ...task, deletingAt: isoAt(59) }, expectedVersion: task.version });
}

/** Runs batches until the store says the task is gone; returns how many it took. */
async function drain(store: StateStore, tenant: string, taskId: string, batchSize: number, max = 1000): Promise<number> {
  for (let calls = 1; calls <= max; calls++) if (await store.deleteTaskBatch(tenant, taskId, batchSize)) return calls;
  throw new Error(`task ${taskId} still not deleted after ${max} batches`);
}

export const deletionCases: ConformanceCases = (ctx) => {
  describe('deletion', () => {
    it('a task marked for deletion reads as missing everywhere, and no write can land on it', async () => {
      const tenant = ctx.tenant();
      const { task, requests } = await seedTask(ctx.store, tenant, 3);
      const marked = await mark(ctx.store, tenant, task);

      expect(await ctx.store.getTask(tenant, task.taskId)).toBeUndefined();
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([]);
      expect(await ctx.store.getRequest(tenant, requests[1].requestId)).toBeUndefined();
      expect((await ctx.store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 })).items).toEqual([]);
      expect(await ctx.store.getTaskForDeletion(tenant, task.taskId)).toMatchObject({ taskId: task.taskId, deletingAt: isoAt(59), version: marked.version });
      const including = await ctx.store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10, includeDeleting: true });
      expect(including.items.map((t) => [t.taskId, t.deletingAt])).toEqual([[task.taskId, isoAt(59)]]);
      // A create of the same id (a follow-on that found it missing) and a stale writer both lose.
      await expect(ctx.store.commit(tenant, { task: makeTask(tenant, { taskId: task.taskId }), expectedVersion: 0 })).rejects.toBeInstanceOf(
        VersionConflictError,
      );
      await expect(ctx.store.commit(tenant, { task, expectedVersion: task.version })).rejects.toBeInstanceOf(VersionConflictError);
    });

    it('deletes a long task in bounded batches, leaving nothing of it; the id is then free', async () => {
      const tenant = ctx.tenant();
      const { task, requests } = await seedTask(ctx.store, tenant, 120, { sessionId: 'doomed', ownerId: 'alice' });
      await mark(ctx.store, tenant, task);
      // One key or item per request at least (its index entry): the count below is not vacuous.
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBeGreaterThanOrEqual(120);

      const calls = await drain(ctx.store, tenant, task.taskId, 25);

      expect(calls).toBeGreaterThanOrEqual(5); // 120 requests, at most 25 a batch
      expect(calls).toBeLessThanOrEqual(6);
      expect(await ctx.store.getTaskForDeletion(tenant, task.taskId)).toBeUndefined();
      for (const r of [requests[0], requests[60], requests[119]]) expect(await ctx.store.getRequest(tenant, r.requestId)).toBeUndefined();
      expect((await ctx.store.listOwnerSessions(tenant, 'alice', { limit: 10 })).items).toEqual([]);
      expect(await ctx.store.deleteTaskBatch(tenant, task.taskId, 25)).toBe(true); // again: already gone
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBe(0);
      const again = makeTask(tenant, { taskId: task.taskId });
      await expect(ctx.store.commit(tenant, { task: again, expectedVersion: 0 })).resolves.toMatchObject({ version: 1 });
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([]);
    });

    it('a deletion interrupted half-way is finished by another process; the task never reads as present meanwhile', async () => {
      const [first, second] = await ctx.stores(2);
      const tenant = ctx.tenant();
      const { task } = await seedTask(first, tenant, 30);
      await mark(first, tenant, task);
      expect(await first.deleteTaskBatch(tenant, task.taskId, 10)).toBe(false);
      expect(await first.deleteTaskBatch(tenant, task.taskId, 10)).toBe(false);

      expect(await second.getTask(tenant, task.taskId)).toBeUndefined();
      expect(await second.listRequests(tenant, task.taskId)).toEqual([]);
      expect(await second.getTaskForDeletion(tenant, task.taskId)).toMatchObject({ deletingAt: isoAt(59) });
      expect(await drain(second, tenant, task.taskId, 10)).toBeLessThanOrEqual(2);
      expect(await first.getTaskForDeletion(tenant, task.taskId)).toBeUndefined();
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBe(0);
    });

    it("another tenant's marked task does not exist for deletion: nothing of it is touched", async () => {
      const tenant = ctx.tenant();
      const other = ctx.tenant();
      const { task, requests } = await seedTask(ctx.store, tenant, 3);
      await mark(ctx.store, tenant, task);

      expect(await ctx.store.getTaskForDeletion(other, task.taskId)).toBeUndefined();
      expect(await ctx.store.deleteTaskBatch(other, task.taskId, 10)).toBe(true);
      expect(await ctx.store.listSessionTasks(other, task.ownerId, task.sessionId, { limit: 10, includeDeleting: true })).toEqual({ items: [] });
      expect((await ctx.store.listOwnerSessions(other, task.ownerId, { limit: 10 })).items).toEqual([]);
      expect(await ctx.store.getTaskForDeletion(tenant, task.taskId)).toMatchObject({ deletingAt: isoAt(59) });
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBeGreaterThanOrEqual(requests.length);
    });

    it('two processes finishing the same deletion at once both end with it gone', async () => {
      const stores = await ctx.stores(3);
      const tenant = ctx.tenant();
      const { task } = await seedTask(stores[0], tenant, 60);
      await mark(stores[0], tenant, task);

      const calls = await Promise.all(stores.map((s) => drain(s, tenant, task.taskId, 10, 50)));

      expect(calls.every((n) => n >= 1)).toBe(true);
      expect(await stores[1].getTaskForDeletion(tenant, task.taskId)).toBeUndefined();
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBe(0);
    });

    it('leaves a task that is not marked alone, and keeps the session of its neighbours', async () => {
      const tenant = ctx.tenant();
      const { task: kept } = await seedTask(ctx.store, tenant, 2, { sessionId: 's', ownerId: 'alice' });
      const { task: doomed } = await seedTask(ctx.store, tenant, 2, { sessionId: 's', ownerId: 'alice' });
      expect(await ctx.store.deleteTaskBatch(tenant, kept.taskId, 10)).toBe(true); // nothing marked: nothing to do
      expect(await ctx.store.listRequests(tenant, kept.taskId)).toHaveLength(2);

      await mark(ctx.store, tenant, doomed);
      await drain(ctx.store, tenant, doomed.taskId, 10);

      expect((await ctx.store.listSessionTasks(tenant, 'alice', 's', { limit: 10 })).items.map((t) => t.taskId)).toEqual([kept.taskId]);
      expect((await ctx.store.listOwnerSessions(tenant, 'alice', { limit: 10 })).items).toEqual(['s']);
      expect(await ctx.store.getTask(tenant, kept.taskId)).toMatchObject({ version: kept.version });
    });
  });

  describe("listing an owner's sessions", () => {
    it("pages the owner's session ids, each once, and nothing of other owners or tenants", async () => {
      const tenant = ctx.tenant();
      for (const [sessionId, ownerId] of [
        ['s1', 'alice'],
        ['s2', 'alice'],
        ['s1', 'alice'],
        ['s3', 'alice'],
        ['s4', 'bob'],
      ]) {
        await ctx.store.commit(tenant, { task: makeTask(tenant, { sessionId, ownerId }), expectedVersion: 0 });
      }
      await ctx.store.commit(ctx.tenant(), { task: makeTask(tenant, { sessionId: 's9', ownerId: 'alice' }), expectedVersion: 0 });

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await ctx.store.listOwnerSessions(tenant, 'alice', { limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor && ++pages < 10);
      expect(seen.sort()).toEqual(['s1', 's2', 's3']);
      expect((await ctx.store.listOwnerSessions(tenant, 'bob', { limit: 10 })).items).toEqual(['s4']);
      expect((await ctx.store.listOwnerSessions(tenant, 'carol', { limit: 10 })).items).toEqual([]);
    });

    it('lists the session of a create holding the most requests one commit takes (49)', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { sessionId: 'big', ownerId: 'alice', requestCount: 49 });
      const requests = Array.from({ length: 49 }, (_, seq) => makeRequest(task, seq));
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests });
      expect((await ctx.store.listOwnerSessions(tenant, 'alice', { limit: 10 })).items).toEqual(['big']);
    });
  });
};
