import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';

/**
 * Invariant: of N writers that all read version v and commit expecting v, exactly one succeeds;
 * every other one gets VersionConflictError; and the stored state is exactly the winner's write
 * (header and requests), with no trace of any loser. Each writer uses its own store instance
 * (its own connection), standing in for separate processes; all commits are issued in the same
 * tick, so the backend, not the test, decides the interleaving.
 */
const WRITERS = 16;

export const concurrentCommitCases: ConformanceCases = (ctx) => {
  describe(`${WRITERS} concurrent committers with the same expected version`, () => {
    it('exactly one wins an update, and the stored state is exactly the winner’s', async () => {
      const stores = await ctx.stores(WRITERS);
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const r0 = makeRequest(task, 0);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [r0] });

      const writes = stores.map((_, i) => ({
        task: { ...task, requestCount: 2, metadata: { writer: String(i) } },
        expectedVersion: 1,
        requests: [makeRequest(task, 1, { output: `writer ${i}` })],
      }));
      const results = await Promise.allSettled(stores.map((s, i) => s.commit(tenant, writes[i])));

      const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      expect(winners).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(VersionConflictError);
      const w = winners[0];
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(writes[w].task, 1));
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([r0, writes[w].requests[0]]);
      const losers = writes.filter((_, i) => i !== w).map((x) => x.requests[0].requestId);
      expect(await Promise.all(losers.map((id) => ctx.store.getRequest(tenant, id)))).toEqual(losers.map(() => undefined));
    });

    it('exactly one wins a create, and the session lists the task once', async () => {
      const stores = await ctx.stores(WRITERS);
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const writes = stores.map((_, i) => ({
        task: { ...task, metadata: { writer: String(i) } },
        expectedVersion: 0,
        requests: [makeRequest(task, 0, { output: `writer ${i}` })],
      }));

      const results = await Promise.allSettled(stores.map((s, i) => s.commit(tenant, writes[i])));

      const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      expect(winners).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(VersionConflictError);
      const w = winners[0];
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(writes[w].task, 0));
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual(writes[w].requests);
      const listed = await ctx.store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 100 });
      expect(listed.items).toEqual([storedAs(writes[w].task, 0)]);
    });
  });
};
