import type { Pool, PoolClient } from 'pg';
import { ConnectionPoolStats, mustWaitForConnection, PoolWaitOutcome } from '../../connection-pool';
import { brokenConnection } from './postgres-errors';

/** What a pooled statement reports and how its failures are named (the state store's, the archive's). */
export interface PooledQueryHooks {
  /** The pool's numbers, to tell whether this call will wait for a connection. */
  stats(): ConnectionPoolStats;
  /** Told how long a call that had to wait for a connection waited, and how that ended; absent: waits are not timed. */
  waited?: (fromMs: number, outcome: PoolWaitOutcome) => void;
  /** The error to throw for what node-postgres threw; `unsent`: the statement never left (no connection was had). */
  mapError(err: unknown, unsent: boolean): unknown;
}

/**
 * Waits (boundedly: the pool's connection timeout) for a pooled connection, runs one statement on
 * it, and maps failures through `hooks.mapError`: a connection never had means the statement was
 * never sent. A connection that failed is discarded rather than put back. Shared by the PostgreSQL
 * state store and the audit archive, whose pools are alike.
 */
export async function queryPooled<R>(pool: Pool, text: string, values: unknown[] | undefined, hooks: PooledQueryHooks): Promise<R[]> {
  let client: PoolClient;
  const waitFrom = hooks.waited && mustWaitForConnection(hooks.stats()) ? performance.now() : undefined;
  try {
    client = await pool.connect();
  } catch (err) {
    if (waitFrom !== undefined) hooks.waited!(waitFrom, 'failed');
    throw hooks.mapError(err, true);
  }
  if (waitFrom !== undefined) hooks.waited!(waitFrom, 'acquired');
  // A connection that breaks while checked out reports it here as well as to its statement.
  const onError = () => undefined;
  client.on('error', onError);
  let failure: unknown;
  try {
    return (await client.query(text, values)).rows as R[];
  } catch (err) {
    failure = err;
    throw hooks.mapError(err, false);
  } finally {
    client.off('error', onError);
    client.release(failure !== undefined && brokenConnection(failure));
  }
}
