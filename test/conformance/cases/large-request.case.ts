import { ConformanceCases } from '../state-store.conformance';
import { isoAt, makeRequest, makeTask } from '../fixtures';

const MIB = 1024 * 1024;

/** `bytes` of text with multi-byte characters and JSON escapes, so a split at any byte is caught. */
function bigText(bytes: number, seed: string): string {
  const unit = `${seed} ✓ "quoted" \\ line\n`;
  return unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit))).slice(0, bytes);
}

export const largeRequestCases: ConformanceCases = (ctx) => {
  describe('large requests', () => {
    it('round-trips a 5 MiB request, then a smaller rewrite of it exactly, and deletion leaves nothing', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { requestCount: 2, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      const big = makeRequest(task, 0, { status: 'Running', output: undefined });
      big.messages[0] = { id: 'm-0-u', role: 'user', items: [{ content_type: 'text', content: bigText(5 * MIB, 'question') }], created_at: isoAt(0) };
      const small = makeRequest(task, 1);

      let stored = await ctx.store.commit(tenant, { task, expectedVersion: 0, requests: [big, small] });
      expect(await ctx.store.getRequest(tenant, big.requestId)).toEqual(big);
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([big, small]);

      // The answer (unbounded) is written after the model ran: a larger record still.
      const answered = { ...big, status: 'Completed' as const, output: bigText(3 * MIB, 'answer') };
      stored = await ctx.store.commit(tenant, { task: stored, expectedVersion: stored.version, requests: [answered] });
      expect(await ctx.store.getRequest(tenant, big.requestId)).toEqual(answered);

      // Rewritten smaller: nothing of the larger versions is mixed in.
      const shrunk = { ...answered, messages: answered.messages.slice(1), output: 'short' };
      stored = await ctx.store.commit(tenant, { task: stored, expectedVersion: stored.version, requests: [shrunk] });
      expect(await ctx.store.getRequest(tenant, big.requestId)).toEqual(shrunk);
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([shrunk, small]);
      // Task, 2 requests, 2 index entries, session entry, owner's session: nothing of the big versions left.
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBeLessThanOrEqual(7);

      // Grown again, then deleted: no item of it remains.
      const regrown = { ...shrunk, output: bigText(2 * MIB, 'again') };
      stored = await ctx.store.commit(tenant, { task: stored, expectedVersion: stored.version, requests: [regrown] });
      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual([regrown, small]);
      await ctx.store.commit(tenant, { task: { ...stored, deletingAt: isoAt(59) }, expectedVersion: stored.version });
      let done = false;
      for (let i = 0; i < 50 && !done; i++) done = await ctx.store.deleteTaskBatch(tenant, task.taskId, 10);
      expect(done).toBe(true);
      expect(await ctx.store.getRequest(tenant, big.requestId)).toBeUndefined();
      if (ctx.initializer.countStored) expect(await ctx.initializer.countStored(tenant)).toBe(0);
    }, 60_000);

    it('stores many large requests in one commit (past any per-transaction size limit)', async () => {
      const tenant = ctx.tenant();
      const task = makeTask(tenant, { requestCount: 12 });
      const requests = Array.from({ length: 12 }, (_, seq) => makeRequest(task, seq, { output: bigText(380_000 + seq, `r${seq}`) }));

      await ctx.store.commit(tenant, { task, expectedVersion: 0, requests });

      expect(await ctx.store.listRequests(tenant, task.taskId)).toEqual(requests);
      expect(await ctx.store.getRequest(tenant, requests[11].requestId)).toEqual(requests[11]);
    }, 60_000);
  });
};
