import { TaskRecord } from '../../../src/state/state.entities';
import { StateStore } from '../../../src/state/state-store';
import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeTask, storedAs } from '../fixtures';

async function allPages(store: StateStore, tenant: string, owner: string, session: string, limit: number) {
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listSessionTasks(tenant, owner, session, { limit, cursor });
    pages.push(page.items.map((t) => t.taskId));
    cursor = page.nextCursor;
  } while (cursor && pages.length < 20);
  return pages;
}

export const sessionListingCases: ConformanceCases = (ctx) => {
  describe('session listing', () => {
    it("lists one owner's tasks of one session, oldest first, in pages", async () => {
      const tenant = ctx.tenant();
      const tasks: TaskRecord[] = [];
      for (let i = 0; i < 5; i++) {
        const task = makeTask(tenant, { sessionId: 's-1', ownerId: 'alice', createdAt: isoAt(i), updatedAt: isoAt(i) });
        await ctx.store.commit(tenant, { task, expectedVersion: 0 });
        tasks.push(task);
      }
      // Neighbours that must not appear: another session of the same owner.
      await ctx.store.commit(tenant, { task: makeTask(tenant, { sessionId: 's-2', ownerId: 'alice' }), expectedVersion: 0 });
      // A later commit does not move a task in the listing.
      await ctx.store.commit(tenant, { task: { ...tasks[1], updatedAt: isoAt(30) }, expectedVersion: 1 });
      const ids = tasks.map((t) => t.taskId);

      expect(await allPages(ctx.store, tenant, 'alice', 's-1', 2)).toEqual([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
      expect(await allPages(ctx.store, tenant, 'alice', 's-1', 5)).toEqual([ids]);
      expect(await allPages(ctx.store, tenant, 'alice', 's-1', 100)).toEqual([ids]);
      const first = await ctx.store.listSessionTasks(tenant, 'alice', 's-1', { limit: 1 });
      expect(first.items).toEqual([storedAs(tasks[0], 0)]);
      expect(first.nextCursor).toEqual(expect.any(String));
    });

    it('another owner using the same session id sees nothing of the first', async () => {
      const tenant = ctx.tenant();
      const alices = makeTask(tenant, { sessionId: 'shared', ownerId: 'alice' });
      await ctx.store.commit(tenant, { task: alices, expectedVersion: 0 });

      expect(await ctx.store.listSessionTasks(tenant, 'bob', 'shared', { limit: 10 })).toEqual({ items: [] });
      const bobs = makeTask(tenant, { sessionId: 'shared', ownerId: 'bob' });
      await ctx.store.commit(tenant, { task: bobs, expectedVersion: 0 });

      expect((await ctx.store.listSessionTasks(tenant, 'bob', 'shared', { limit: 10 })).items).toEqual([storedAs(bobs, 0)]);
      expect((await ctx.store.listSessionTasks(tenant, 'alice', 'shared', { limit: 10 })).items).toEqual([storedAs(alices, 0)]);
    });
  });
};
