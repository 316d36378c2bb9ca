import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask } from '../fixtures';

/**
 * A commit writes only the requests it carries: earlier request records are neither rewritten
 * nor required in the write (so a commit costs what it writes, not the task's history).
 */
export const requestIndependenceCases: ConformanceCases = (ctx) => {
  describe('request records are independent', () => {
    it('a follow-on commit with one new request leaves earlier records byte-identical', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const r0 = makeRequest(task, 0);
      const r1 = makeRequest(task, 1, { status: 'Running', output: undefined });
      await ctx.store.commit(tenant, { task: { ...task, requestCount: 2 }, expectedVersion: 0, requests: [r0, r1] });
      const raw = async () => ctx.initializer.rawRequest && (await ctx.initializer.rawRequest(tenant, task.taskId, 0));
      const rawBefore = await raw();
      const r0Before = JSON.stringify(await ctx.store.getRequest(tenant, r0.requestId));

      // Replace r1 (it completed) and add r2; r0 is not in either write.
      const r1done = { ...r1, status: 'Completed' as const, output: 'done' };
      await ctx.store.commit(tenant, { task: { ...task, requestCount: 2 }, expectedVersion: 1, requests: [r1done] });
      const r2 = makeRequest(task, 2);
      await ctx.store.commit(tenant, { task: { ...task, requestCount: 3 }, expectedVersion: 2, requests: [r2] });

      expect(JSON.stringify(await ctx.store.getRequest(tenant, r0.requestId))).toBe(r0Before);
      expect(await raw()).toBe(rawBefore);
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([r0, r1done, r2]);
      expect(await ctx.store.getRequest(tenant, r1.requestId)).toEqual(r1done);
    });
  });
};
