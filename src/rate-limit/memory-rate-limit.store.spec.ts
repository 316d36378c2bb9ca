import { MemoryRateLimitStore } from './memory-rate-limit.store';

const MINUTE = 60_000;

describe('MemoryRateLimitStore', () => {
  let now = 1_000_000;
  const clock = () => now;

  it('counts a refused request in no window: an agent-limit refusal leaves the caller window untouched', async () => {
    const store = new MemoryRateLimitStore(clock);
    const q = (caller: string) => ({ periodMs: MINUTE, callerRpm: { key: `c:${caller}`, limit: 5 }, agentRpm: { key: 'agent', limit: 2 } });
    expect((await store.admit(q('a'))).refused).toBeUndefined();
    expect((await store.admit(q('a'))).refused).toBeUndefined();
    const refused = await store.admit(q('a'));
    expect(refused).toMatchObject({ refused: 'agent_rpm' });
    expect(refused.retryAfterMs).toBeCloseTo(30_000, 0);
    // Caller a spent 2 of 5 (the refused third counts nowhere): this fourth leaves 2, not 1.
    const after = await store.admit({ periodMs: MINUTE, callerRpm: { key: 'c:a', limit: 5 } });
    expect(after.states).toEqual([{ kind: 'caller_rpm', limit: 5, remaining: 2, resetSeconds: 36 }]);
  });

  it('holds concurrency slots until released, per caller', async () => {
    const store = new MemoryRateLimitStore(clock);
    const q = (caller: string, slot: string) => ({ periodMs: MINUTE, callerConcurrency: { key: `k:${caller}`, limit: 2, slot, ttlMs: 1000 } });
    expect((await store.admit(q('a', '1'))).states[0]).toMatchObject({ remaining: 1 });
    expect((await store.admit(q('a', '2'))).states[0]).toMatchObject({ remaining: 0 });
    expect(await store.admit(q('a', '3'))).toMatchObject({ refused: 'caller_concurrency', retryAfterMs: 1000 });
    expect((await store.admit(q('b', '4'))).refused).toBeUndefined();
    await store.release('k:a', '1');
    await store.release('k:a', '1'); // twice: still one slot
    expect((await store.admit(q('a', '5'))).refused).toBeUndefined();
    expect((await store.admit(q('a', '6'))).refused).toBe('caller_concurrency');
  });

  it('refuses on tokens once a charge filled the window, and admits again when it drained', async () => {
    const store = new MemoryRateLimitStore(clock);
    const tpm = { key: 't:a', limit: 1000 };
    expect((await store.admit({ periodMs: MINUTE, callerTpm: tpm })).refused).toBeUndefined();
    await store.charge(tpm, MINUTE, 1500);
    const refused = await store.admit({ periodMs: MINUTE, callerTpm: tpm });
    expect(refused.refused).toBe('caller_tpm');
    expect(refused.retryAfterMs).toBeCloseTo(30_001, 0);
    now += 30_001;
    expect((await store.admit({ periodMs: MINUTE, callerTpm: tpm })).refused).toBeUndefined();
  });

  it('stays within its key bound: expired windows go first, then the oldest tenth', async () => {
    const store = new MemoryRateLimitStore(clock, 100);
    for (let i = 0; i < 100; i++) await store.admit({ periodMs: MINUTE, callerRpm: { key: `old:${i}`, limit: 10 } });
    expect(store.size).toBe(100);
    now += MINUTE; // every window has drained
    await store.admit({ periodMs: MINUTE, callerRpm: { key: 'new', limit: 10 } });
    expect(store.size).toBe(1);
    for (let i = 0; i < 150; i++) await store.admit({ periodMs: MINUTE, callerRpm: { key: `live:${i}`, limit: 10 } });
    expect(store.size).toBeLessThanOrEqual(100);
  });
});
