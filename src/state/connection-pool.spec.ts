import { isPooledStore, mustWaitForConnection } from './connection-pool';

describe('connection pool (the metrics port of a pooled store)', () => {
  it('a call waits only when no connection is idle and the pool is at its max', () => {
    expect(mustWaitForConnection({ max: 5, total: 5, idle: 0 })).toBe(true);
    expect(mustWaitForConnection({ max: 5, total: 6, idle: 0 })).toBe(true); // one being removed still counts
    expect(mustWaitForConnection({ max: 5, total: 5, idle: 1 })).toBe(false); // an idle one is handed over
    expect(mustWaitForConnection({ max: 5, total: 4, idle: 0 })).toBe(false); // a new one is opened
    expect(mustWaitForConnection({ max: 5, total: 0, idle: 0 })).toBe(false);
  });

  it('knows a pooled store by its two methods', () => {
    const pooled = { poolStats: () => ({ max: 1, total: 0, idle: 0, waiting: 0 }), onPoolWait: () => undefined };
    expect(isPooledStore(pooled)).toBe(true);
    expect(isPooledStore({ poolStats: pooled.poolStats })).toBe(false);
    expect(isPooledStore({ ping: async () => undefined })).toBe(false);
    expect(isPooledStore(undefined)).toBe(false);
    expect(isPooledStore(null)).toBe(false);
  });
});
