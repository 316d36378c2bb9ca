import { setTimeout as sleep } from 'node:timers/promises';
import { ArchiveEntry, StateStore } from '../../../src/state/state-store';
import { TaskRecord } from '../../../src/state/state.entities';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask } from '../fixtures';

/**
 * Each case lists the whole index several times (DynamoDB: a Query per partition each time), which
 * a loaded machine running DynamoDB Local can stretch past Jest's default 5 s.
 */
const TIMEOUT_MS = 30_000;

/** Far enough ahead of any store's clock that every entry so far is changed "before" it. */
const LATER = () => Date.now() + 3_600_000;

/** Every page up to `before`, in order, keeping this case's tenants' entries (other cases' stay listed). */
async function listAll(store: StateStore, before: number, tenants: string[], limit = 100, from?: string): Promise<ArchiveEntry[]> {
  const out: ArchiveEntry[] = [];
  let cursor = from;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await store.listUnarchived(before, { limit, cursor });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    out.push(...page.items.filter((e) => tenants.includes(e.tenantId)));
    cursor = page.nextCursor;
    if (!cursor) return out;
  }
  throw new Error('listUnarchived kept answering a next page');
}

/** The entries as (tenant, task, version), without their times. */
const listed = (entries: ArchiveEntry[]) => entries.map(({ tenantId, taskId, version }) => ({ tenantId, taskId, version }));

/** Commits `task` at `version + 1`, then waits a little, so two commits never share the store's millisecond. */
async function commitApart(store: StateStore, tenant: string, task: TaskRecord, expectedVersion: number): Promise<TaskRecord> {
  const stored = await store.commit(tenant, { task, expectedVersion });
  await sleep(5);
  return stored;
}

export const archiveIndexCases: ConformanceCases = (ctx) => {
  describe('archive index (listUnarchived, markArchived)', () => {
    it(
      "lists a task after its create and after each update, at its new version and the store's time of the commit",
      async () => {
        const store = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const slack = store.clockSkewMs + 1000;
        const task = makeTask(tenant);
        const t0 = store.now();
        await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] });
        const [created] = await listAll(store, LATER(), [tenant]);
        expect(created).toMatchObject({ tenantId: tenant, taskId: task.taskId, version: 1 });
        expect(created.changedAt).toBeGreaterThanOrEqual(t0 - slack);
        expect(created.changedAt).toBeLessThanOrEqual(store.now() + slack);

        await sleep(5);
        await store.commit(tenant, { task: { ...task, status: 'Completed' }, expectedVersion: 1 });
        const updated = await listAll(store, LATER(), [tenant]);
        expect(listed(updated)).toEqual([{ tenantId: tenant, taskId: task.taskId, version: 2 }]);
        expect(updated[0].changedAt).toBeGreaterThanOrEqual(created.changedAt);
      },
      TIMEOUT_MS,
    );

    it(
      'lists nothing, and marks nothing, in a store without archiveIndex',
      async () => {
        const archive = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const task = makeTask(tenant);
        await ctx.store.commit(tenant, { task, expectedVersion: 0 });
        await ctx.store.commit(tenant, { task, expectedVersion: 1 });
        expect(await ctx.store.listUnarchived(LATER(), { limit: 10 })).toEqual({ items: [] });
        await expect(ctx.store.markArchived([{ tenantId: tenant, taskId: task.taskId, version: 2 }])).resolves.toBeUndefined();
        // Its commits wrote no entry (where the stores share their data, the archive store would see one).
        expect(await listAll(archive, LATER(), [tenant])).toEqual([]);
      },
      TIMEOUT_MS,
    );

    it(
      'markArchived unlists a task at its listed version or above, never at a lower one: a later commit stays listed',
      async () => {
        const store = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const [a, b] = [makeTask(tenant), makeTask(tenant)];
        await commitApart(store, tenant, a, 0);
        await commitApart(store, tenant, b, 0);
        await commitApart(store, tenant, a, 1);
        expect(listed(await listAll(store, LATER(), [tenant]))).toEqual([
          { tenantId: tenant, taskId: b.taskId, version: 1 },
          { tenantId: tenant, taskId: a.taskId, version: 2 },
        ]);

        // An archiver that took version 1 of `a` (the commit of version 2 came after): `a` stays listed.
        // One batch, with an entry of a task not listed (another tenant's id) skipped.
        await store.markArchived([
          { tenantId: tenant, taskId: a.taskId, version: 1 },
          { tenantId: tenant, taskId: b.taskId, version: 1 },
          { tenantId: ctx.tenant(), taskId: a.taskId, version: 9 },
        ]);
        expect(listed(await listAll(store, LATER(), [tenant]))).toEqual([{ tenantId: tenant, taskId: a.taskId, version: 2 }]);

        await store.markArchived([{ tenantId: tenant, taskId: a.taskId, version: 2 }]);
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);
        // Again (nothing listed): nothing to do.
        await store.markArchived([{ tenantId: tenant, taskId: a.taskId, version: 2 }]);

        // A commit after the archive took it lists it again; a late mark of the older version leaves it.
        await store.commit(tenant, { task: a, expectedVersion: 2 });
        await store.markArchived([{ tenantId: tenant, taskId: a.taskId, version: 2 }]);
        expect(listed(await listAll(store, LATER(), [tenant]))).toEqual([{ tenantId: tenant, taskId: a.taskId, version: 3 }]);
        // A version above the listed one unlists it too.
        await store.markArchived([{ tenantId: tenant, taskId: a.taskId, version: 7 }]);
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);
        await expect(store.markArchived([])).resolves.toBeUndefined();
      },
      TIMEOUT_MS,
    );

    it(
      'lists the oldest change first, of every tenant, up to `before` (inclusive), in pages whose cursors stay valid',
      async () => {
        const store = await ctx.archiveStore();
        const [a, b] = [ctx.tenant(), ctx.tenant()];
        const a1 = makeTask(a);
        const b1 = makeTask(b);
        const a2 = makeTask(a);
        await commitApart(store, a, a1, 0);
        await commitApart(store, b, b1, 0);
        await commitApart(store, a, a2, 0);
        // A later change moves a task to the end.
        await commitApart(store, a, a1, 1);

        const all = await listAll(store, LATER(), [a, b]);
        expect(listed(all)).toEqual([
          { tenantId: b, taskId: b1.taskId, version: 1 },
          { tenantId: a, taskId: a2.taskId, version: 1 },
          { tenantId: a, taskId: a1.taskId, version: 2 },
        ]);
        for (let i = 1; i < all.length; i++) expect(all[i].changedAt).toBeGreaterThan(all[i - 1].changedAt);
        // One at a time, through the cursors: the same entries in the same order.
        expect(await listAll(store, LATER(), [a, b], 1)).toEqual(all);
        // `before` is inclusive, and stops the listing at the change it names.
        expect(await listAll(store, all[1].changedAt, [a, b])).toEqual(all.slice(0, 2));
        expect(await listAll(store, all[0].changedAt, [a, b])).toEqual(all.slice(0, 1));

        // A cursor taken in a listing up to one change goes on, in a later call up to a later time, to
        // what follows it, changes made since included.
        let cursor: string | undefined;
        for (let pages = 0; ; pages++) {
          const page = await store.listUnarchived(all[1].changedAt, { limit: 1, cursor });
          cursor = page.nextCursor;
          if (page.items[0]?.taskId === b1.taskId) break;
          if (!cursor || pages > 1000) throw new Error('the first change was not listed');
        }
        expect(cursor).toBeDefined();
        const b2 = makeTask(b);
        await store.commit(b, { task: b2, expectedVersion: 0 });
        expect(listed(await listAll(store, LATER(), [a, b], 100, cursor))).toEqual([...listed(all.slice(1)), { tenantId: b, taskId: b2.taskId, version: 1 }]);
      },
      TIMEOUT_MS,
    );

    it(
      'a commit that fails lists nothing new',
      async () => {
        const store = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const task = makeTask(tenant);
        await commitApart(store, tenant, task, 0);
        const before = await listAll(store, LATER(), [tenant]);
        expect(listed(before)).toEqual([{ tenantId: tenant, taskId: task.taskId, version: 1 }]);

        await expect(store.commit(tenant, { task, expectedVersion: 0 })).rejects.toBeInstanceOf(VersionConflictError);
        await expect(store.commit(tenant, { task, expectedVersion: 5 })).rejects.toBeInstanceOf(VersionConflictError);
        expect(await listAll(store, LATER(), [tenant])).toEqual(before);

        await store.markArchived([{ tenantId: tenant, taskId: task.taskId, version: 1 }]);
        await expect(store.commit(tenant, { task, expectedVersion: 3 })).rejects.toBeInstanceOf(VersionConflictError);
        const missing = makeTask(tenant);
        await expect(store.commit(tenant, { task: missing, expectedVersion: 1 })).rejects.toBeInstanceOf(VersionConflictError);
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);
      },
      TIMEOUT_MS,
    );

    it(
      'lists a task marked for deletion; once deleteTaskBatch has removed it, it is not listed',
      async () => {
        const store = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const task = makeTask(tenant, { requestCount: 3 });
        await store.commit(tenant, { task, expectedVersion: 0, requests: [0, 1, 2].map((seq) => makeRequest(task, seq)) });
        await store.markArchived([{ tenantId: tenant, taskId: task.taskId, version: 1 }]);

        const marked = await store.commit(tenant, { task: { ...task, deletingAt: isoAt(59) }, expectedVersion: 1 });
        expect(await store.getTask(tenant, task.taskId)).toBeUndefined();
        expect(listed(await listAll(store, LATER(), [tenant]))).toEqual([{ tenantId: tenant, taskId: task.taskId, version: marked.version }]);

        let steps = 0;
        while (!(await store.deleteTaskBatch(tenant, task.taskId, 2))) if (++steps > 20) throw new Error('deletion did not finish');
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);
      },
      TIMEOUT_MS,
    );

    it(
      'never lists a task that expired, and lists a task created again over it at its new version',
      async () => {
        const store = await ctx.archiveStore();
        const tenant = ctx.tenant();
        const task = makeTask(tenant);
        await store.commit(tenant, { task, expectedVersion: 0 });
        await store.commit(tenant, { task: { ...task, expiresAt: new Date(Date.now() - 60_000).toISOString() }, expectedVersion: 1 });
        expect(await store.getTask(tenant, task.taskId)).toBeUndefined();
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);
        // Asked again (the entry, where one was left, is gone now).
        expect(await listAll(store, LATER(), [tenant])).toEqual([]);

        await store.commit(tenant, { task: makeTask(tenant, { taskId: task.taskId }), expectedVersion: 0 });
        expect(listed(await listAll(store, LATER(), [tenant]))).toEqual([{ tenantId: tenant, taskId: task.taskId, version: 1 }]);
      },
      TIMEOUT_MS,
    );

    it(
      'lists the same task id of two tenants apart, each entry with its tenant; marking one leaves the other',
      async () => {
        const store = await ctx.archiveStore();
        const [a, b] = [ctx.tenant(), ctx.tenant()];
        await commitApart(store, a, makeTask(a, { taskId: 'task-same' }), 0);
        await commitApart(store, b, makeTask(b, { taskId: 'task-same' }), 0);
        expect(listed(await listAll(store, LATER(), [a, b]))).toEqual([
          { tenantId: a, taskId: 'task-same', version: 1 },
          { tenantId: b, taskId: 'task-same', version: 1 },
        ]);

        await store.markArchived([{ tenantId: a, taskId: 'task-same', version: 1 }]);
        expect(listed(await listAll(store, LATER(), [a, b]))).toEqual([{ tenantId: b, taskId: 'task-same', version: 1 }]);
      },
      TIMEOUT_MS,
    );
  });
};
