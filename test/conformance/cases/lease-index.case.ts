import { LeaseEntry, StateStore } from '../../../src/state/state-store';
import { TaskRecord, WebhookDelivery } from '../../../src/state/state.entities';
import { DEAD_DELIVERY_AT } from '../../../src/state/state-store.util';
import { VersionConflictError } from '../../../src/state/state.errors';
import { ConformanceCases } from '../state-store.conformance';
import { makeRequest, makeTask } from '../fixtures';

/**
 * Leases of these cases lapse in 1970 (epoch ms from T), long before any other case's, so a
 * listing up to T + something sees only them; each case still keeps to its own tenants.
 */
const T = 1_000_000;

/** Every page up to `before`, in order, keeping this case's tenants' entries. */
async function listAll(store: StateStore, before: number, tenants: string[], limit = 100): Promise<LeaseEntry[]> {
  const out: LeaseEntry[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.listLapsedLeases(before, { limit, cursor });
    expect(page.items.length).toBeLessThanOrEqual(limit);
    out.push(...page.items.filter((e) => tenants.includes(e.tenantId)));
    cursor = page.nextCursor;
    if (!cursor) return out;
  }
  throw new Error('listLapsedLeases kept answering a next page');
}

const leased = (tenant: string, expiresAt: number, overrides: Partial<TaskRecord> = {}) =>
  makeTask(tenant, { lease: { requestId: `req-${expiresAt}`, expiresAt }, ...overrides });

export const leaseIndexCases: ConformanceCases = (ctx) => {
  describe('lease index (listLapsedLeases)', () => {
    it('lists the tasks whose lease lapsed by `before`, of every tenant, the oldest lapse first, in pages', async () => {
      const [a, b] = [ctx.tenant(), ctx.tenant()];
      const a1 = leased(a, T + 30);
      const a2 = leased(a, T + 10);
      const b1 = leased(b, T + 20);
      const a3 = leased(a, T + 50);
      const idle = makeTask(a);
      for (const [tenant, task] of [
        [a, a1],
        [a, a2],
        [b, b1],
        [a, a3],
        [a, idle],
      ] as const)
        await ctx.store.commit(tenant, { task, expectedVersion: 0 });

      const expected = [
        { tenantId: a, taskId: a2.taskId, expiresAt: T + 10 },
        { tenantId: b, taskId: b1.taskId, expiresAt: T + 20 },
        { tenantId: a, taskId: a1.taskId, expiresAt: T + 30 },
      ];
      expect(await listAll(ctx.store, T + 40, [a, b])).toEqual(expected);
      // One at a time, through the cursors: the same entries in the same order.
      expect(await listAll(ctx.store, T + 40, [a, b], 1)).toEqual(expected);
      // `before` is inclusive; a task without a lease is never listed.
      expect(await listAll(ctx.store, T + 50, [a, b])).toEqual([...expected, { tenantId: a, taskId: a3.taskId, expiresAt: T + 50 }]);
      expect(await listAll(ctx.store, T + 9, [a, b])).toEqual([]);
    });

    it('lists each of the leases that lapsed at the same instant once, a page at a time', async () => {
      const [a, b] = [ctx.tenant(), ctx.tenant()];
      const tasks = [leased(a, T + 500), leased(b, T + 500), leased(a, T + 500), leased(a, T + 501)];
      for (const task of tasks) await ctx.store.commit(task.tenantId, { task, expectedVersion: 0 });

      const listed = await listAll(ctx.store, T + 501, [a, b], 1);
      expect(
        listed
          .slice(0, 3)
          .map((e) => e.taskId)
          .sort(),
      ).toEqual(
        tasks
          .slice(0, 3)
          .map((t) => t.taskId)
          .sort(),
      );
      expect(listed[3]).toEqual({ tenantId: a, taskId: tasks[3].taskId, expiresAt: T + 501 });
      expect(listed).toHaveLength(4);
    });

    it('follows the header in each commit: a renewal moves the entry, a release unlists it, a lost commit changes nothing', async () => {
      const tenant = ctx.tenant();
      const task = leased(tenant, T + 10);
      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0, { status: 'Running' })] });
      expect(await listAll(ctx.store, T + 10, [tenant])).toEqual([{ tenantId: tenant, taskId: task.taskId, expiresAt: T + 10 }]);

      await ctx.store.commit(tenant, { task: { ...task, lease: { requestId: 'req-a', expiresAt: T + 100 } }, expectedVersion: 1 });
      expect(await listAll(ctx.store, T + 99, [tenant])).toEqual([]);
      expect(await listAll(ctx.store, T + 100, [tenant])).toEqual([{ tenantId: tenant, taskId: task.taskId, expiresAt: T + 100 }]);

      const stale = ctx.store.commit(tenant, { task: { ...task, lease: { requestId: 'req-b', expiresAt: T + 5 } }, expectedVersion: 1 });
      await expect(stale).rejects.toBeInstanceOf(VersionConflictError);
      expect(await listAll(ctx.store, T + 100, [tenant])).toEqual([{ tenantId: tenant, taskId: task.taskId, expiresAt: T + 100 }]);

      const { lease: _released, ...free } = task;
      await ctx.store.commit(tenant, { task: { ...free, status: 'Failed' }, expectedVersion: 2 });
      expect(await listAll(ctx.store, T + 1000, [tenant])).toEqual([]);

      // Taken again (a follow-on): listed at its new lease's lapse.
      await ctx.store.commit(tenant, { task: { ...task, lease: { requestId: 'req-c', expiresAt: T + 200 } }, expectedVersion: 3 });
      expect(await listAll(ctx.store, T + 1000, [tenant])).toEqual([{ tenantId: tenant, taskId: task.taskId, expiresAt: T + 200 }]);
    });

    it('never lists a task that expired, and lists a task created again over an expired one at its own lease', async () => {
      const tenant = ctx.tenant();
      const task = leased(tenant, T + 10);
      await ctx.store.commit(tenant, { task, expectedVersion: 0 });
      const past = new Date(Date.now() - 60_000).toISOString();
      await ctx.store.commit(tenant, { task: { ...task, expiresAt: past }, expectedVersion: 1 });
      expect(await ctx.store.getTask(tenant, task.taskId)).toBeUndefined();
      expect(await listAll(ctx.store, T + 1000, [tenant])).toEqual([]);
      // Asked again (the entry, where one was left, is gone now).
      expect(await listAll(ctx.store, T + 1000, [tenant])).toEqual([]);

      const again = leased(tenant, T + 20, { taskId: task.taskId });
      await ctx.store.commit(tenant, { task: again, expectedVersion: 0 });
      expect(await listAll(ctx.store, T + 1000, [tenant])).toEqual([{ tenantId: tenant, taskId: task.taskId, expiresAt: T + 20 }]);
    });

    it('lists the same task id of two tenants apart, each following its own header', async () => {
      const [a, b] = [ctx.tenant(), ctx.tenant()];
      const ta = leased(a, T + 10, { taskId: 'task-same' });
      const tb = leased(b, T + 20, { taskId: 'task-same' });
      await ctx.store.commit(a, { task: ta, expectedVersion: 0 });
      await ctx.store.commit(b, { task: tb, expectedVersion: 0 });
      expect(await listAll(ctx.store, T + 1000, [a, b])).toEqual([
        { tenantId: a, taskId: 'task-same', expiresAt: T + 10 },
        { tenantId: b, taskId: 'task-same', expiresAt: T + 20 },
      ]);

      const { lease: _released, ...free } = ta;
      await ctx.store.commit(a, { task: free, expectedVersion: 1 });
      expect(await listAll(ctx.store, T + 1000, [a, b])).toEqual([{ tenantId: b, taskId: 'task-same', expiresAt: T + 20 }]);
    });

    it("lists a task at its outbox's first due delivery or its pause's expiry when that comes before its lease, and a dead delivery at DEAD_DELIVERY_AT", async () => {
      const [a] = [ctx.tenant()];
      const delivery = (dueAt: number, dead = false): WebhookDelivery => ({
        id: `msg_${dueAt}`,
        event: 'request.completed',
        requestId: 'req-1',
        url: 'https://hooks.example.com/in',
        secretEnv: 'HOOK_SECRET',
        createdAt: T,
        attempts: dead ? 9 : 0,
        dueAt,
        ...(dead ? { dead: true } : {}),
      });
      const outboxOnly = makeTask(a, { outbox: [delivery(T + 30), delivery(T + 15)] });
      const both = leased(a, T + 40, { outbox: [delivery(T + 25)] });
      const leaseFirst = leased(a, T + 5, { outbox: [delivery(T + 60)] });
      const deadOnly = makeTask(a, { outbox: [delivery(T + 1, true)] });
      // A pause with an approval TTL is due when it expires; one without a TTL waits for nothing.
      const pausing = makeTask(a, { status: 'Paused', pauseExpiresAt: T + 35 });
      const waiting = makeTask(a, { status: 'Paused' });
      for (const task of [outboxOnly, both, leaseFirst, deadOnly, pausing, waiting]) await ctx.store.commit(a, { task, expectedVersion: 0 });

      expect(await listAll(ctx.store, T + 100, [a])).toEqual([
        { tenantId: a, taskId: leaseFirst.taskId, expiresAt: T + 5 },
        { tenantId: a, taskId: outboxOnly.taskId, expiresAt: T + 15 },
        { tenantId: a, taskId: both.taskId, expiresAt: T + 25 },
        { tenantId: a, taskId: pausing.taskId, expiresAt: T + 35 },
      ]);
      expect(await listAll(ctx.store, DEAD_DELIVERY_AT, [a])).toContainEqual({ tenantId: a, taskId: deadOnly.taskId, expiresAt: DEAD_DELIVERY_AT });

      // Delivered (the outbox emptied) and released: unlisted; a mark for deletion unlists whatever waits.
      await ctx.store.commit(a, { task: { ...outboxOnly, outbox: [] }, expectedVersion: 1 });
      await ctx.store.commit(a, { task: { ...deadOnly, deletingAt: new Date(T).toISOString() }, expectedVersion: 1 });
      await ctx.store.commit(a, { task: { ...pausing, status: 'Canceled', pauseExpiresAt: undefined }, expectedVersion: 1 });
      expect(await listAll(ctx.store, DEAD_DELIVERY_AT, [a])).toEqual([
        { tenantId: a, taskId: leaseFirst.taskId, expiresAt: T + 5 },
        { tenantId: a, taskId: both.taskId, expiresAt: T + 25 },
      ]);
    });
  });
};
