import { setTimeout as sleep } from 'node:timers/promises';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask, storedAs } from '../fixtures';

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
/** How long ago an expired task expired: more than a store clock's resolution (DynamoDB's is its Date header's whole second), so every store sees it expired. */
const EXPIRED_AGO_MS = 5_000;
/** How long after expiresAt every store's clock has certainly passed it (DynamoDB's may read up to ~0.5 s behind: a Date header's whole second, halved, plus the round trip). */
const STORE_CLOCK_SLACK_MS = 1_100;

export const expiryCases: ConformanceCases = (ctx) => {
  describe('expiry', () => {
    it('an expired task reads as missing everywhere, its live neighbours do not', async () => {
      const tenant = ctx.tenant();
      const base = { ownerId: 'alice', sessionId: 's' };
      const before = makeTask(tenant, { ...base, createdAt: isoAt(0), expiresAt: inMs(3_600_000) });
      const expiring = makeTask(tenant, { ...base, createdAt: isoAt(1), expiresAt: inMs(3_600_000) });
      const after = makeTask(tenant, { ...base, createdAt: isoAt(2) });
      const request = makeRequest(expiring, 0);
      await ctx.store.commit(tenant, { task: before, expectedVersion: 0 });
      await ctx.store.commit(tenant, { task: expiring, expectedVersion: 0, requests: [request] });
      await ctx.store.commit(tenant, { task: after, expectedVersion: 0 });
      // A commit can move expiresAt into the past (as a sliding expiry that was not renewed would be).
      await ctx.store.commit(tenant, { task: { ...expiring, expiresAt: inMs(-EXPIRED_AGO_MS) }, expectedVersion: 1 });

      expect(await ctx.store.getTask(tenant, expiring.taskId)).toBeUndefined();
      expect(await ctx.store.listRequests(tenant, expiring.taskId)).toEqual([]);
      expect(await ctx.store.getRequest(tenant, request.requestId)).toBeUndefined();
      // Pages skip it without coming up short.
      const page1 = await ctx.store.listSessionTasks(tenant, 'alice', 's', { limit: 1 });
      const page2 = await ctx.store.listSessionTasks(tenant, 'alice', 's', { limit: 1, cursor: page1.nextCursor });
      expect([...page1.items, ...page2.items]).toEqual([storedAs(before, 0), storedAs(after, 0)]);
      expect(page2.nextCursor).toBeUndefined();
      expect(await ctx.store.getTask(tenant, before.taskId)).toEqual(storedAs(before, 0));
    });

    it('a task becomes missing once its expiresAt passes', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { expiresAt: inMs(1500) });
      await ctx.store.commit(tenant, { task, expectedVersion: 0 });
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(storedAs(task, 0));

      // A store judges expiry by its clock as this process knows it (src/state/store-clock.ts):
      // DynamoDB's, learnt from whole-second Date headers, may read up to about half a second
      // behind. So the read is tried from just after expiresAt until that much later.
      const expiresAt = Date.parse(task.expiresAt!);
      await sleep(expiresAt - Date.now() + 50);
      let read = await ctx.store.getTask(tenant, task.taskId);
      while (read !== undefined && Date.now() < expiresAt + STORE_CLOCK_SLACK_MS) {
        await sleep(50);
        read = await ctx.store.getTask(tenant, task.taskId);
      }
      expect(read).toBeUndefined();
      expect((await ctx.store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 })).items).toEqual([]);
    });

    it('an expired task id can be created again, from a clean slate', async () => {
      const tenant = ctx.tenant();
      const old = makeTask(tenant, { expiresAt: inMs(-EXPIRED_AGO_MS), sessionId: 'old' });
      const oldRequests = [makeRequest(old, 0), makeRequest(old, 1)];
      await ctx.store.commit(tenant, { task: old, expectedVersion: 0, requests: oldRequests });

      // Its version is gone with it: expecting it is a conflict.
      await expect(ctx.store.commit(tenant, { task: old, expectedVersion: 1 })).rejects.toBeInstanceOf(VersionConflictError);
      const fresh = { ...old, expiresAt: undefined, sessionId: 'new', createdAt: isoAt(5) };
      const request = makeRequest(fresh, 0);
      expect(await ctx.store.commit(tenant, { task: fresh, expectedVersion: 0, requests: [request] })).toEqual(storedAs(fresh, 0));

      expect(await ctx.store.getTask(tenant, old.taskId)).toEqual(storedAs(fresh, 0));
      expect(await ctx.store.listRequests(tenant, old.taskId)).toEqual([request]);
      // Neither the old requests (one's seq is now taken by the new request) nor the old session.
      expect(await ctx.store.getRequest(tenant, oldRequests[0].requestId)).toBeUndefined();
      expect(await ctx.store.getRequest(tenant, oldRequests[1].requestId)).toBeUndefined();
      expect(await ctx.store.getRequest(tenant, request.requestId)).toEqual(request);
      expect(await ctx.store.listSessionTasks(tenant, old.ownerId, 'old', { limit: 10 })).toEqual({ items: [] });
      expect((await ctx.store.listSessionTasks(tenant, old.ownerId, 'new', { limit: 10 })).items).toEqual([storedAs(fresh, 0)]);
    });
  });
};
