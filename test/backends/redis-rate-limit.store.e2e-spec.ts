/**
 * The rate-limit script on a real Redis (src/rate-limit/rate-limit.lua.ts): the same decisions as
 * the memory windows (gcra.ts), all limits of a request in one atomic call, and a concurrency slot
 * its replica stopped refreshing lapses (a killed replica does not hold slots forever).
 */
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-rate-limit.store';
import { RedisRateLimitStore } from '../../src/rate-limit/redis-rate-limit.store';
import { RateLimitStore } from '../../src/rate-limit/rate-limit-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { testRedisUrl, uniqueName } from '../support/services';

const MINUTE = 60_000;

describe('RedisRateLimitStore', () => {
  let redis: RedisStateStore;
  let store: RedisRateLimitStore;

  beforeAll(() => {
    redis = new RedisStateStore({ url: testRedisUrl(), keyPrefix: `${uniqueName('rate-limit')}:` });
    store = new RedisRateLimitStore(redis);
  });
  afterAll(() => redis.close());

  it.each([1, 7, 60])('admits exactly %i of a concurrent burst, as the memory windows do', async (limit) => {
    const redisKey = store.key(`burst-${limit}`);
    const memory: RateLimitStore = new MemoryRateLimitStore();
    const fire = (s: RateLimitStore, key: string) =>
      Promise.all(Array.from({ length: limit + 4 }, () => s.admit({ periodMs: MINUTE, callerRpm: { key, limit } })));
    const [onRedis, inMemory] = await Promise.all([fire(store, redisKey), fire(memory, 'burst')]);
    expect(onRedis.filter((r) => !r.refused)).toHaveLength(limit);
    expect(inMemory.filter((r) => !r.refused)).toHaveLength(limit);
    expect(onRedis.map((r) => r.states[0]!.remaining).sort()).toEqual(inMemory.map((r) => r.states[0]!.remaining).sort());
    const refused = onRedis.find((r) => r.refused)!;
    expect(refused.refused).toBe('caller_rpm');
    expect(refused.retryAfterMs).toBeGreaterThan(MINUTE / limit - 1000);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(Math.ceil(MINUTE / limit)); // whole ms, rounded up
  });

  it('counts a refused request nowhere: a full concurrency set leaves the request window as it was', async () => {
    const q = (slot: string) => ({
      periodMs: MINUTE,
      callerRpm: { key: store.key('atomic-rpm'), limit: 10 },
      callerConcurrency: { key: store.key('atomic-conc'), limit: 1, slot, ttlMs: MINUTE },
    });
    expect((await store.admit(q('s1'))).refused).toBeUndefined();
    expect((await store.admit(q('s2'))).refused).toBe('caller_concurrency');
    expect((await store.admit(q('s3'))).refused).toBe('caller_concurrency');
    await store.release(store.key('atomic-conc'), 's1');
    const next = await store.admit(q('s4'));
    // Two admitted of 10: 8 left (the two refusals took nothing).
    expect(next.states.find((s) => s.kind === 'caller_rpm')!.remaining).toBe(8);
  });

  it('lets an unrefreshed slot lapse; a refreshed one stays', async () => {
    const key = store.key('lapse');
    const q = (slot: string, ttlMs: number) => ({ periodMs: MINUTE, callerConcurrency: { key, limit: 2, slot, ttlMs } });
    // Both slots would lapse 1 s on; `alive` is refreshed at once for a minute, `dead` never. The
    // margins are whole seconds, so a busy machine (a late timer, a slow reply) changes nothing.
    expect((await store.admit(q('dead', 1000))).refused).toBeUndefined();
    expect((await store.admit(q('alive', 1000))).refused).toBeUndefined();
    await store.refresh(key, 'alive', MINUTE);
    expect((await store.admit(q('third', MINUTE))).refused).toBe('caller_concurrency');
    await new Promise((r) => setTimeout(r, 1500));
    // 1.5 s on: `dead` lapsed, `alive` did not.
    expect((await store.admit(q('third', MINUTE))).refused).toBeUndefined();
    expect((await store.admit(q('fourth', MINUTE))).refused).toBe('caller_concurrency');
  });

  it('adds tokens on the Redis clock and refuses until the overshoot drained', async () => {
    const tpm = { key: store.key('tokens'), limit: 600 };
    expect((await store.admit({ periodMs: MINUTE, callerTpm: tpm })).refused).toBeUndefined();
    await store.charge(tpm, MINUTE, 700);
    const refused = await store.admit({ periodMs: MINUTE, callerTpm: tpm });
    expect(refused.refused).toBe('caller_tpm');
    // 100 tokens over at 100 ms a token: about 10 s.
    expect(refused.retryAfterMs).toBeGreaterThan(9_000);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(10_001);
  });
});
