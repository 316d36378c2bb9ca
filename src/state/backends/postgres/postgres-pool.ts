import { ClientBase, ClientConfig, Pool, PoolClient } from 'pg';
import { ConnectionPoolStats, mustWaitForConnection, PoolWaitListener, PoolWaitOutcome } from '../../connection-pool';
import { brokenConnection } from './postgres-errors';

export interface PostgresPoolOptions {
  /** Connections at most. */
  max: number;
  /** The server's statement_timeout for every statement; the answer is waited for 1000 ms longer. */
  statementTimeoutMs: number;
  /** Before a new connection serves anything (it must SET the statement timeout: onConnect's job). */
  onConnect(client: ClientBase): Promise<void>;
}

/**
 * The pool of connections the PostgreSQL state store and the audit archive each keep: node-postgres'
 * Pool with the bounds both need (a connection waited for at most `connectionTimeoutMillis`, an answer
 * at most the statement timeout + 1 s, idle connections closed after 30 s), the waits for a
 * connection timed for the app's metrics when something listens (src/state/connection-pool.ts), and
 * one statement per call with failures mapped by the caller: a connection never had means the
 * statement was never sent. A connection that failed is discarded rather than put back.
 */
export class PostgresPool {
  private readonly pool: Pool;
  private readonly waitListeners: PoolWaitListener[] = [];

  constructor(
    config: ClientConfig,
    private readonly options: PostgresPoolOptions,
  ) {
    this.pool = new Pool({
      ...config,
      max: options.max,
      query_timeout: options.statementTimeoutMs + 1000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      onConnect: (client) => options.onConnect(client),
    });
    // An idle connection the server dropped (a restart): the pool discards it; calls fail on their own.
    this.pool.on('error', () => undefined);
  }

  /** The pool's counts now, for the app's metrics. */
  stats(): ConnectionPoolStats {
    return { max: this.options.max, total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  /** Told how long each call that had to wait for a connection waited, and how that ended (none: calls are not timed). */
  onWait(listener: PoolWaitListener): void {
    this.waitListeners.push(listener);
  }

  /** One statement on a pooled connection; what node-postgres throws goes through `mapError` (`unsent`: no connection was had). */
  async query<R>(text: string, values: unknown[] | undefined, mapError: (err: unknown, unsent: boolean) => unknown): Promise<R[]> {
    let client: PoolClient;
    const waitFrom = this.waitListeners.length && mustWaitForConnection(this.stats()) ? performance.now() : undefined;
    try {
      client = await this.pool.connect();
    } catch (err) {
      if (waitFrom !== undefined) this.waited(waitFrom, 'failed');
      throw mapError(err, true);
    }
    if (waitFrom !== undefined) this.waited(waitFrom, 'acquired');
    // A connection that breaks while checked out reports it here as well as to its statement.
    const onError = () => undefined;
    client.on('error', onError);
    let failure: unknown;
    try {
      return (await client.query(text, values)).rows as R[];
    } catch (err) {
      failure = err;
      throw mapError(err, false);
    } finally {
      client.off('error', onError);
      client.release(failure !== undefined && brokenConnection(failure));
    }
  }

  async end(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }

  private waited(from: number, outcome: PoolWaitOutcome): void {
    const seconds = (performance.now() - from) / 1000;
    for (const listener of this.waitListeners) listener(seconds, outcome);
  }
}
