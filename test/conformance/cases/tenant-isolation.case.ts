import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';

export const tenantIsolationCases: ConformanceCases = (ctx) => {
  describe('tenant isolation', () => {
    it("another tenant cannot read a tenant's task, requests or session", async () => {
      const a = ctx.tenant();
      const b = ctx.tenant();
      const task = makeTask(a);
      const request = makeRequest(task, 0);
      await ctx.store.commit(a, { task, expectedVersion: 0, requests: [request] });

      expect(await ctx.store.getTask(b, task.taskId)).toBeUndefined();
      expect(await ctx.store.listRequests(b, task.taskId)).toEqual([]);
      expect(await ctx.store.getRequest(b, request.requestId)).toBeUndefined();
      expect(await ctx.store.listSessionTasks(b, task.ownerId, task.sessionId, { limit: 10 })).toEqual({ items: [] });
      // ...while tenant A still sees it all.
      expect(await ctx.store.getRequest(a, request.requestId)).toEqual(request);
    });

    it('commits to the same task id in two tenants do not collide', async () => {
      const a = ctx.tenant();
      const b = ctx.tenant();
      const taskA = makeTask(a, { metadata: { tenant: 'a' } });
      const taskB = { ...taskA, tenantId: b, metadata: { tenant: 'b' } };
      const requestA = makeRequest(taskA, 0);
      const requestB = makeRequest(taskB, 0, { requestId: requestA.requestId, output: 'b' });
      await ctx.store.commit(a, { task: taskA, expectedVersion: 0, requests: [requestA] });
      await ctx.store.commit(a, { task: taskA, expectedVersion: 1 });

      // Tenant A's version 2 means nothing to tenant B, where the task does not exist yet.
      await expect(ctx.store.commit(b, { task: taskB, expectedVersion: 2 })).rejects.toBeInstanceOf(VersionConflictError);
      await ctx.store.commit(b, { task: taskB, expectedVersion: 0, requests: [requestB] });

      expect(await ctx.store.getTask(a, taskA.taskId)).toEqual(storedAs(taskA, 1));
      expect(await ctx.store.getTask(b, taskA.taskId)).toEqual(storedAs(taskB, 0));
      expect(await ctx.store.getRequest(a, requestA.requestId)).toEqual(requestA);
      expect(await ctx.store.getRequest(b, requestA.requestId)).toEqual(requestB);
      expect(await ctx.store.listRequests(a, taskA.taskId)).toEqual([requestA]);
      expect(await ctx.store.listRequests(b, taskA.taskId)).toEqual([requestB]);
    });

    it('stamps the committing tenant on what it stores, whatever the record says', async () => {
      const a = ctx.tenant();
      const task = makeTask('someone-else');
      const request = makeRequest(task, 0);

      const stored = await ctx.store.commit(a, { task, expectedVersion: 0, requests: [request] });

      expect(stored.tenantId).toBe(a);
      expect((await ctx.store.getTask(a, task.taskId))?.tenantId).toBe(a);
      expect((await ctx.store.getRequest(a, request.requestId))?.tenantId).toBe(a);
      expect(await ctx.store.getTask('someone-else', task.taskId)).toBeUndefined();
    });
  });
};
