import { StateStore } from '../../../src/state/state-store';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask, storedAs } from '../fixtures';
import { TaskRecord } from '../../../src/state/state.entities';

/** Everything a reader can observe of one task, to compare before and after a rejected commit. */
async function snapshot(store: StateStore, tenant: string, task: TaskRecord, requestIds: string[]) {
  return {
    task: await store.getTask(tenant, task.taskId),
    requests: await store.listRequests(tenant, task.taskId),
    byId: await Promise.all(requestIds.map((id) => store.getRequest(tenant, id))),
    session: await store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 100 }),
  };
}

export const staleVersionCases: ConformanceCases = (ctx) => {
  describe('stale expectedVersion', () => {
    it.each([
      ['behind', 1],
      ['ahead', 5],
    ])('is rejected when %s the stored version, with nothing written', async (_label, stale) => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const r0 = makeRequest(task, 0);
      const r1 = makeRequest(task, 1);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [r0] });
      await ctx.store.commit(tenant, { task: { ...task, requestCount: 2 }, expectedVersion: 1, requests: [r1] });
      // The rejected write would change the header, replace r1 and add r2.
      const r1b = makeRequest(task, 1, { output: 'rewritten' });
      const r2 = makeRequest(task, 2);
      const before = await snapshot(ctx.store, tenant, task, [r0.requestId, r1.requestId, r1b.requestId, r2.requestId]);

      const write = { task: { ...task, status: 'Failed' as const, requestCount: 3 }, expectedVersion: stale, requests: [r1b, r2] };
      const err = await ctx.store.commit(tenant, write).catch((e: unknown) => e);

      expect(err).toBeInstanceOf(VersionConflictError);
      expect(err).toMatchObject({ expectedVersion: stale, actualVersion: 2 });
      const after = await snapshot(ctx.store, tenant, task, [r0.requestId, r1.requestId, r1b.requestId, r2.requestId]);
      expect(after).toEqual(before);
      expect(after.task).toEqual(storedAs({ ...task, requestCount: 2 }, 1));
      expect(after.byId).toEqual([r0, r1, undefined, undefined]);
    });

    it('is rejected for a task that does not exist, leaving no header, request or index entry', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const request = makeRequest(task, 0);

      const err = await ctx.store.commit(tenant, { task, expectedVersion: 3, requests: [request] }).catch((e: unknown) => e);

      expect(err).toBeInstanceOf(VersionConflictError);
      expect(err).toMatchObject({ expectedVersion: 3, actualVersion: 0 });
      expect(await snapshot(ctx.store, tenant, task, [request.requestId])).toEqual({
        task: undefined,
        requests: [],
        byId: [undefined],
        session: { items: [] },
      });
      // And the id is still free: a create succeeds afterwards.
      await expect(ctx.store.commit(tenant, { task, expectedVersion: 0 })).resolves.toMatchObject({ version: 1 });
    });
  });
};
