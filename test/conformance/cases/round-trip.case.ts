import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask, storedAs } from '../fixtures';

function attempt(mutate: () => unknown): void {
  try {
    mutate();
  } catch {
    // frozen: equally fine
  }
}

export const roundTripCases: ConformanceCases = (ctx) => {
  describe('round trip', () => {
    it('stores a task with its requests and reads back exactly what was written', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { metadata: { title: 'Trip ✈', empty: '' }, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      const requests = [makeRequest(task, 0), makeRequest(task, 1, { status: 'Failed', output: undefined, error: { code: 'X', message: 'boom' } })];

      const returned = await ctx.store.commit(tenant, { task: { ...task, version: 42 }, expectedVersion: 0, requests });

      expect(returned).toEqual(storedAs(task, 0)); // version is the store's, not the caller's
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(task, 0));
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual(requests);
      expect(await ctx.store.getRequest(tenant, requests[0].requestId)).toEqual(requests[0]);
      expect(await ctx.store.getRequest(tenant, requests[1].requestId)).toEqual(requests[1]);
    });

    it('bumps the version by exactly one per commit and keeps requests in seq order', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const r0 = makeRequest(task, 0);
      const r1 = makeRequest(task, 1);
      await ctx.store.commit(tenant, { task, expectedVersion: 0 });
      // Written out of order, listed in order.
      await ctx.store.commit(tenant, { task: { ...task, requestCount: 1 }, expectedVersion: 1, requests: [r1] });
      const third = { ...task, status: 'Completed' as const, requestCount: 2, updatedAt: isoAt(9) };
      const returned = await ctx.store.commit(tenant, { task: third, expectedVersion: 2, requests: [r0] });

      expect(returned.version).toBe(3);
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(third, 2));
      expect((await ctx.store.listRequests(tenant, task.taskId)).map((r) => r.requestId)).toEqual([r0.requestId, r1.requestId]);
    });

    it('no caller can change stored state through an object it passed in or got back', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { metadata: { a: '1' } });
      const request = makeRequest(task, 0);
      const returned = await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
      task.metadata.a = 'changed';
      request.output = 'changed';
      // What a commit returns is the stored record, not a view of the caller's objects.
      expect(returned.metadata.a).toBe('1');
      // A backend may hand out frozen records (the assignment throws) or copies (it is ignored).
      attempt(() => (returned.metadata.a = 'changed'));
      const read = await ctx.store.getTask(tenant, task.taskId);
      attempt(() => (read!.status = 'Failed'));
      const [listed] = await ctx.store.listRequests(tenant, task.taskId);
      attempt(() => (listed.output = 'changed'));

      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs({ ...task, metadata: { a: '1' } }, 0));
      expect((await ctx.store.listRequests(tenant, task.taskId))[0].output).toBe('answer 0');
    });
  });
};
