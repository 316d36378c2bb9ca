/**
 * What a state store that keeps a pool of connections (PostgreSQL) tells the app's metrics about
 * it (docs/configuration.md, Metrics): the pool's counts when they are scraped, and each call that
 * had to wait for a connection. The store knows nothing of telemetry; the app registers the
 * metrics, and only for a store that has a pool (`isPooledStore`).
 */
export interface ConnectionPoolStats {
  /** Connections the pool may open (TA_POSTGRES_POOL_MAX). */
  max: number;
  /** Connections open or being opened now. */
  total: number;
  /** Of those, connections idle in the pool. */
  idle: number;
  /** Calls queued for a connection now (every connection busy, the pool at its max). */
  waiting: number;
}

/** How a wait for a connection ended: one was handed over, or none was within the acquire timeout (or it could not be made). */
export const POOL_WAIT_OUTCOMES = ['acquired', 'failed'] as const;
export type PoolWaitOutcome = (typeof POOL_WAIT_OUTCOMES)[number];

/** Told of each call that found every connection busy and the pool at its max, once the wait ends. */
export type PoolWaitListener = (waitedSeconds: number, outcome: PoolWaitOutcome) => void;

export interface PooledStore {
  poolStats(): ConnectionPoolStats;
  /** Adds a listener of waits; a store without listeners does not time its calls. */
  onPoolWait(listener: PoolWaitListener): void;
}

export function isPooledStore(store: unknown): store is PooledStore {
  const s = store as Partial<PooledStore> | null | undefined;
  return typeof s?.poolStats === 'function' && typeof s.onPoolWait === 'function';
}

/** True when a call for a connection now would queue: none idle and the pool at its max (otherwise one is handed over or opened at once). */
export function mustWaitForConnection(stats: Pick<ConnectionPoolStats, 'max' | 'total' | 'idle'>): boolean {
  return stats.idle === 0 && stats.total >= stats.max;
}
