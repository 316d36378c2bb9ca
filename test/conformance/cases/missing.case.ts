import { ConformanceCases } from '../state-store.conformance';

export const missingCases: ConformanceCases = (ctx) => {
  describe('missing records', () => {
    it('reads as undefined or empty, never as an error', async () => {
      const tenant = ctx.tenant();
      expect(await ctx.store.getTask(tenant, 'no-such-task')).toBeUndefined();
      expect(await ctx.store.listRequests(tenant, 'no-such-task')).toEqual([]);
      expect(await ctx.store.getRequest(tenant, 'no-such-request')).toBeUndefined();
      expect(await ctx.store.listSessionTasks(tenant, 'owner-1', 'no-such-session', { limit: 10 })).toEqual({ items: [] });
    });

    it('answers ping', async () => {
      await expect(ctx.store.ping()).resolves.toBeUndefined();
    });
  });
};
