import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';

export const leaseCases: ConformanceCases = (ctx) => {
  describe('leases', () => {
    it('a lease on the task header round-trips, and can be released', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { lease: { requestId: 'req-a', expiresAt: Date.now() + 30_000 } });
      await ctx.store.commit(tenant, { task, expectedVersion: 0 });
      expect((await ctx.store.getTask(tenant, task.taskId))?.lease).toEqual(task.lease);

      const { lease: _released, ...withoutLease } = task;
      await ctx.store.commit(tenant, { task: withoutLease, expectedVersion: 1 });
      const read = await ctx.store.getTask(tenant, task.taskId);
      expect(read).toEqual(storedAs(withoutLease, 1));
      expect(read?.lease).toBeUndefined();
    });

    it('two processes racing to take over an expired lease: exactly one gets it', async () => {
      const [p1, p2] = await ctx.stores(2);
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { status: 'Running', lease: { requestId: 'dead-process', expiresAt: Date.now() - 1000 } });
      await ctx.store.commit(tenant, { task, expectedVersion: 0 });

      // Both read the task, both see the lease lapsed, both try to take it.
      const [seen1, seen2] = await Promise.all([p1.getTask(tenant, task.taskId), p2.getTask(tenant, task.taskId)]);
      expect(seen1!.lease!.expiresAt).toBeLessThan(Date.now());
      const take = (seen: typeof seen1, requestId: string) => ({
        task: { ...seen!, lease: { requestId, expiresAt: Date.now() + 30_000 }, requestCount: 1 },
        expectedVersion: seen!.version,
        requests: [makeRequest(task, 0, { requestId, status: 'Running' })],
      });
      const writes = [take(seen1, `req-p1-${tenant}`), take(seen2, `req-p2-${tenant}`)];
      const results = await Promise.allSettled([p1.commit(tenant, writes[0]), p2.commit(tenant, writes[1])]);

      const won = results.findIndex((r) => r.status === 'fulfilled');
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((results[1 - won] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
      const stored = await ctx.store.getTask(tenant, task.taskId);
      expect(stored?.lease).toEqual(writes[won].task.lease);
      expect(stored?.version).toBe(2);
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual(writes[won].requests);
    });
  });
};
