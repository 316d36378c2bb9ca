import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';

export const createConflictCases: ConformanceCases = (ctx) => {
  describe('create', () => {
    it('fails with VersionConflictError when the task already exists, and the first one stays', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { metadata: { who: 'first' } });
      const first = makeRequest(task, 0);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [first] });

      const second = makeRequest(task, 0);
      const err = await ctx.store
        .commit(tenant, { task: { ...task, metadata: { who: 'second' } }, expectedVersion: 0, requests: [second] })
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(VersionConflictError);
      expect(err).toMatchObject({ code: 'VERSION_CONFLICT', taskId: task.taskId, expectedVersion: 0 });
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(task, 0));
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([first]);
      expect(await ctx.store.getRequest(tenant, second.requestId)).toBeUndefined();
      expect((await ctx.store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 })).items).toHaveLength(1);
    });
  });
};
