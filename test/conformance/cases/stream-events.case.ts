import { StateStore, StreamEvent } from '../../../src/state/state-store';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask } from '../fixtures';

const ev = (n: number, event = 'partial-response', extra: Record<string, unknown> = {}): StreamEvent => ({
  n,
  event,
  data: { task_id: 't', request_id: 'r', output_partial: `piece ${n} ✓ "q"\nline`, ...extra },
});

async function seed(store: StateStore, tenant: string) {
  return store.commit(tenant, { task: makeTask(tenant, { requestCount: 2 }), expectedVersion: 0 });
}

/**
 * The stream log (StateStore.appendStreamEvents / readStreamEvents): an optional capability; a
 * backend that reads `undefined` does not keep one and its cases are skipped.
 */
export const streamEventsCases: ConformanceCases = (ctx) => {
  describe('stream log', () => {
    const supported = async () => (await ctx.store.readStreamEvents(ctx.tenant(), 'probe', 0, -1)) !== undefined;

    it('reads back what was appended, in order, after a given n, across store instances', async () => {
      if (!(await supported())) return;
      const tenant = ctx.tenant();
      const task = await seed(ctx.store, tenant);
      const [one, two] = await ctx.stores(2);
      await one.appendStreamEvents(tenant, task.taskId, 1, [ev(0), ev(1)]);
      await two.appendStreamEvents(tenant, task.taskId, 1, [ev(2), ev(3, 'final-response', { nested: { a: [1, null, true] } })]);
      expect(await two.readStreamEvents(tenant, task.taskId, 1, -1)).toEqual([
        ev(0),
        ev(1),
        ev(2),
        ev(3, 'final-response', { nested: { a: [1, null, true] } }),
      ]);
      expect((await one.readStreamEvents(tenant, task.taskId, 1, 1))!.map((e) => e.n)).toEqual([2, 3]);
      expect(await one.readStreamEvents(tenant, task.taskId, 1, 3)).toEqual([]);
      expect(await one.readStreamEvents(tenant, task.taskId, 0, -1)).toEqual([]);
    });

    it('stores nothing twice (a retried append), keeps one request per task, ignores a late writer', async () => {
      if (!(await supported())) return;
      const tenant = ctx.tenant();
      const task = await seed(ctx.store, tenant);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 0, [ev(0), ev(1)]);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 0, [ev(1), ev(2)]);
      expect((await ctx.store.readStreamEvents(tenant, task.taskId, 0, -1))!.map((e) => e.n)).toEqual([0, 1, 2]);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 1, [ev(5)]);
      expect(await ctx.store.readStreamEvents(tenant, task.taskId, 0, -1)).toEqual([]);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 0, [ev(9)]);
      expect((await ctx.store.readStreamEvents(tenant, task.taskId, 1, -1))!.map((e) => e.n)).toEqual([5]);
    });

    it('stores nothing for a request the task does not hold (a writer of an earlier task of the id), which then holds no later log back', async () => {
      if (!(await supported())) return;
      const tenant = ctx.tenant();
      const task = await seed(ctx.store, tenant); // requests 0 and 1
      await ctx.store.appendStreamEvents(tenant, task.taskId, 3, [ev(0)]);
      expect(await ctx.store.readStreamEvents(tenant, task.taskId, 3, -1)).toEqual([]);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 0, [ev(0)]);
      expect(await ctx.store.readStreamEvents(tenant, task.taskId, 0, -1)).toEqual([ev(0)]);
    });

    it('with the request named, stores nothing unless the task holds that request: a late writer of a deleted task of the same seq joins no new log', async () => {
      if (!(await supported())) return;
      const tenant = ctx.tenant();
      const old = makeTask(tenant, { requestCount: 1 });
      const oldRequest = makeRequest(old, 0);
      const stored = await ctx.store.commit(tenant, { task: old, expectedVersion: 0, requests: [oldRequest] });
      await ctx.store.appendStreamEvents(tenant, old.taskId, 0, [ev(0)], oldRequest.requestId);
      expect(await ctx.store.readStreamEvents(tenant, old.taskId, 0, -1)).toEqual([ev(0)]);
      await ctx.store.appendStreamEvents(tenant, old.taskId, 0, [ev(1)], 'req-of-no-such-request');
      expect(await ctx.store.readStreamEvents(tenant, old.taskId, 0, -1)).toEqual([ev(0)]);

      // Deleted, and created again under the id by another request at the same seq.
      const marked = await ctx.store.commit(tenant, { task: { ...stored, deletingAt: isoAt(59) }, expectedVersion: stored.version });
      while (!(await ctx.store.deleteTaskBatch(tenant, marked.taskId, 25)));
      const fresh = makeTask(tenant, { taskId: old.taskId, requestCount: 1 });
      const freshRequest = makeRequest(fresh, 0);
      await ctx.store.commit(tenant, { task: fresh, expectedVersion: 0, requests: [freshRequest] });
      await ctx.store.appendStreamEvents(tenant, old.taskId, 0, [ev(0, 'mine')], freshRequest.requestId);
      await ctx.store.appendStreamEvents(tenant, old.taskId, 0, [ev(1, 'stale'), ev(2, 'stale')], oldRequest.requestId);
      await ctx.store.appendStreamEvents(tenant, old.taskId, 0, [ev(1, 'mine')], freshRequest.requestId);
      expect(await ctx.store.readStreamEvents(tenant, old.taskId, 0, -1)).toEqual([ev(0, 'mine'), ev(1, 'mine')]);
    });

    it('is tenant-scoped, needs a live task, and is removed by the task deletion', async () => {
      if (!(await supported())) return;
      const tenant = ctx.tenant();
      const task = await seed(ctx.store, tenant);
      await ctx.store.appendStreamEvents(tenant, task.taskId, 1, [ev(0)]);
      expect(await ctx.store.readStreamEvents(ctx.tenant(), task.taskId, 1, -1)).toEqual([]);
      await ctx.store.appendStreamEvents(tenant, 'no-such-task', 1, [ev(0)]);
      expect(await ctx.store.readStreamEvents(tenant, 'no-such-task', 1, -1)).toEqual([]);

      const marked = await ctx.store.commit(tenant, { task: { ...task, deletingAt: isoAt(59) }, expectedVersion: task.version });
      await ctx.store.appendStreamEvents(tenant, task.taskId, 1, [ev(1)]);
      expect(await ctx.store.readStreamEvents(tenant, task.taskId, 1, -1)).toEqual([]);
      while (!(await ctx.store.deleteTaskBatch(tenant, marked.taskId, 25)));
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBe(0);
      // The id is free again: a new task under it starts with no stream log.
      await ctx.store.commit(tenant, { task: makeTask(tenant, { taskId: task.taskId }), expectedVersion: 0 });
      expect(await ctx.store.readStreamEvents(tenant, task.taskId, 1, -1)).toEqual([]);
    });
  });
};
