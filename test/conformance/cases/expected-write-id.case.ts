import { randomUUID } from 'node:crypto';
import { StateStore } from '../../../src/state/state-store';
import { TaskRecord } from '../../../src/state/state.entities';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask } from '../fixtures';

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
/** How long ago an expired task expired: more than a store clock's resolution (DynamoDB's is its Date header's whole second), so every store sees it expired. */
const EXPIRED_AGO_MS = 5_000;

/** Everything a reader can observe of one task, to compare before and after a rejected commit. */
async function observed(store: StateStore, tenant: string, task: TaskRecord, requestIds: string[]) {
  return {
    task: await store.getTask(tenant, task.taskId),
    requests: await store.listRequests(tenant, task.taskId),
    byId: await Promise.all(requestIds.map((id) => store.getRequest(tenant, id))),
  };
}

/** Commits `task` under a fresh writeId on top of `expectedVersion`; the stored task. */
function write(store: StateStore, tenant: string, task: TaskRecord, expectedVersion: number, expectedWriteId?: string) {
  return store.commit(tenant, { task: { ...task, writeId: randomUUID() }, expectedVersion, expectedWriteId });
}

/** Deletes a task to the end, as the deletion service does: mark, then steps until gone. */
async function deleteTask(store: StateStore, tenant: string, task: TaskRecord) {
  await store.commit(tenant, { task: { ...task, deletingAt: isoAt(59) }, expectedVersion: task.version });
  while (!(await store.deleteTaskBatch(tenant, task.taskId, 10)));
}

export const expectedWriteIdCases: ConformanceCases = (ctx) => {
  describe('expectedWriteId', () => {
    it('a commit with the right version but another writeId is rejected with nothing written; the right one applies', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant);
      const r0 = makeRequest(task, 0);
      const v1 = await ctx.store.commit(tenant, { task: { ...task, writeId: randomUUID() }, expectedVersion: 0, requests: [r0] });
      const r0b = makeRequest(task, 0, { output: 'rewritten' });
      const r1 = makeRequest(task, 1);
      const before = await observed(ctx.store, tenant, task, [r0.requestId, r0b.requestId, r1.requestId]);

      const rejected = { task: { ...v1, status: 'Failed' as const, writeId: randomUUID() }, expectedVersion: 1, requests: [r0b, r1] };
      const err = await ctx.store.commit(tenant, { ...rejected, expectedWriteId: randomUUID() }).catch((e: unknown) => e);

      expect(err).toBeInstanceOf(VersionConflictError);
      expect(err).toMatchObject({ expectedVersion: 1 });
      expect(await observed(ctx.store, tenant, task, [r0.requestId, r0b.requestId, r1.requestId])).toEqual(before);
      // A header written without a writeId matches no expected one either.
      const bare = await ctx.store.commit(tenant, { task: { ...v1, writeId: undefined }, expectedVersion: 1 });
      await expect(write(ctx.store, tenant, bare, 2, v1.writeId)).rejects.toBeInstanceOf(VersionConflictError);

      const v3 = await write(ctx.store, tenant, bare, 2);
      const applied = await ctx.store.commit(tenant, {
        ...rejected,
        task: { ...rejected.task, writeId: 'w-4' },
        expectedVersion: 3,
        expectedWriteId: v3.writeId,
      });
      expect(applied).toMatchObject({ version: 4, writeId: 'w-4', status: 'Failed' });
      expect(await ctx.store.getTask(tenant, task.taskId)).toEqual(applied);
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([r0b, r1]);
    });

    // Each store below first writes the task itself (as a replica whose writer then holds it in its
    // cache), then another store ends that incarnation and climbs a new one back to the same version.
    it.each([
      ['expired', 'expiresAt'],
      ['deleted', 'deletion'],
    ] as const)('a task %s and created again to the same version refuses the old incarnation’s writeId', async (_label, how) => {
      const [first, other] = await ctx.stores(2);
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { expiresAt: inMs(3_600_000) });
      const r0 = makeRequest(task, 0);
      await first.commit(tenant, { task: { ...task, writeId: randomUUID() }, expectedVersion: 0, requests: [r0] });
      const old = await write(first, tenant, task, 1);
      if (how === 'expiresAt') {
        await write(other, tenant, { ...old, expiresAt: inMs(-EXPIRED_AGO_MS) }, 2);
      } else {
        await deleteTask(other, tenant, old);
      }
      const fresh = { ...task, sessionId: 'again', createdAt: isoAt(7) };
      const n0 = makeRequest(fresh, 0);
      await other.commit(tenant, { task: { ...fresh, writeId: randomUUID() }, expectedVersion: 0, requests: [n0] });
      const again = await write(other, tenant, fresh, 1);
      expect(again.version).toBe(old.version);
      const before = await observed(first, tenant, task, [r0.requestId, n0.requestId]);

      const stray = makeRequest(task, 0, { output: 'from the old incarnation' });
      const err = await first
        .commit(tenant, {
          task: { ...old, status: 'Failed', writeId: randomUUID() },
          expectedVersion: old.version,
          expectedWriteId: old.writeId,
          requests: [stray],
        })
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(VersionConflictError);
      expect(await observed(first, tenant, task, [r0.requestId, n0.requestId])).toEqual(before);
      expect(before.requests).toEqual([n0]);
      await expect(write(first, tenant, again, again.version, again.writeId)).resolves.toMatchObject({ version: again.version + 1, sessionId: 'again' });
    });
  });
};
