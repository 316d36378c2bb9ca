import { ClientBase, ClientConfig, Pool, PoolClient } from 'pg';
import { ConnectionPoolStats, mustWaitForConnection, PoolWaitListener, PoolWaitOutcome } from '../../connection-pool';
import { brokenConnection } from './postgres-errors';
import { PipelineLane } from './postgres-pipeline';
import { dropStalled, queryOn } from './postgres-query-on';

export interface PostgresPoolOptions {
  /** Connections at most. */
  max: number;
  /** The server's statement_timeout for every statement; the answer is waited for 1000 ms longer. */
  statementTimeoutMs: number;
  /** Before a new connection serves anything (it must SET the statement timeout: onConnect's job). */
  onConnect(client: ClientBase): Promise<void>;
  /**
   * One of the `max` connections is a pipelined lane (postgres-pipeline.ts) for the statements
   * sent with `pipelined` (default false; never with `max` 1: the one connection is the pool's).
   */
  pipeline?: boolean;
}

/**
 * The pool of connections the PostgreSQL state store and the audit archive each keep: node-postgres'
 * Pool with the bounds both need (a connection waited for at most `connectionTimeoutMillis`, an answer
 * at most the statement timeout + 1 s (`dropStalled`), idle connections closed after 30 s), the waits for a
 * connection timed for the app's metrics when something listens (src/state/connection-pool.ts), and
 * one statement per call with failures mapped by the caller: a connection never had means the
 * statement was never sent. A connection that failed is discarded rather than put back.
 */
export class PostgresPool {
  private readonly pool: Pool;
  private readonly waitListeners: PoolWaitListener[] = [];
  /** How long a statement's answer is waited for: the server's statement timeout + 1 s. */
  private readonly readTimeoutMs: number;
  /** The connections whose statement's answer is awaited, and when (performance.now()) to give up on it. */
  private readonly awaiting = new Map<PoolClient, number>();
  /** Drops the connections in `awaiting` past their time; runs while statements are awaited (see watch). */
  private sweeper?: NodeJS.Timeout;
  /** The pipelined connection, when the pool has one (PostgresPoolOptions.pipeline). */
  private readonly lane?: PipelineLane;
  /** Connections node-postgres' pool may open: `max`, less the lane's. */
  private readonly pooledMax: number;

  constructor(
    config: ClientConfig,
    private readonly options: PostgresPoolOptions,
  ) {
    this.readTimeoutMs = options.statementTimeoutMs + 1000;
    const laned = options.pipeline === true && options.max > 1;
    this.pooledMax = laned ? options.max - 1 : options.max;
    if (laned) {
      this.lane = new PipelineLane(config, { readTimeoutMs: this.readTimeoutMs, onConnect: options.onConnect, onSend: () => this.startSweeper() });
    }
    this.pool = new Pool({
      ...config,
      max: this.pooledMax,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      onConnect: (client) => options.onConnect(client),
    });
    // An idle connection the server dropped (a restart): the pool discards it; calls fail on their own.
    this.pool.on('error', () => undefined);
  }

  /** The pool's counts now, for the app's metrics. */
  stats(): ConnectionPoolStats {
    const lane = this.lane?.open ? 1 : 0;
    return { max: this.options.max, total: this.pool.totalCount + lane, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  /** Told how long each call that had to wait for a connection waited, and how that ended (none: calls are not timed). */
  onWait(listener: PoolWaitListener): void {
    this.waitListeners.push(listener);
  }

  /**
   * One statement on a pooled connection; what node-postgres throws goes through `mapError`
   * (`unsent`: no connection was had). With `name`, a named prepared statement: parsed and planned
   * once per connection, then only bound and run (node-postgres remembers, per connection, the
   * names it prepared; one name must always come with one text).
   */
  async query<R>(text: string, values: unknown[] | undefined, mapError: (err: unknown, unsent: boolean) => unknown, name?: string): Promise<R[]> {
    let client: PoolClient;
    const waitFrom =
      this.waitListeners.length && mustWaitForConnection({ max: this.pooledMax, total: this.pool.totalCount, idle: this.pool.idleCount })
        ? performance.now()
        : undefined;
    try {
      client = await this.pool.connect();
    } catch (err) {
      if (waitFrom !== undefined) this.waited(waitFrom, 'failed');
      throw mapError(err, true);
    }
    if (waitFrom !== undefined) this.waited(waitFrom, 'acquired');
    // A connection that breaks while checked out reports it here as well as to its statement.
    client.on('error', ignore);
    // The answer is waited for readTimeoutMs: then the connection is dropped (a stalled one would
    // otherwise hold the call for ever) and the statement fails as a broken connection does. Watched
    // by the pool's one sweeper, not node-postgres' `query_timeout`, which sets a closure on each
    // statement's Query after making it, as its promise does (see queryOn), nor a timer per
    // statement (setting and clearing one was ~2 µs of every statement).
    this.watch(client);
    let failure: unknown;
    try {
      return (await queryOn<R>(client, text, values, name)).rows;
    } catch (err) {
      failure = err;
      throw mapError(err, false);
    } finally {
      this.awaiting.delete(client);
      client.off('error', ignore);
      client.release(failure !== undefined && brokenConnection(failure));
    }
  }

  /**
   * One statement on the pipelined lane when it can take it now (connected, flowing: see
   * PipelineLane.take), else on a pooled connection as `query`. On the lane no connection is waited
   * for, so a failure there is never `unsent`.
   */
  async queryPipelined<R>(text: string, values: unknown[] | undefined, mapError: (err: unknown, unsent: boolean) => unknown, name?: string): Promise<R[]> {
    const answer = this.lane?.take<R>(text, values, name);
    if (!answer) return this.query<R>(text, values, mapError, name);
    try {
      return (await answer).rows;
    } catch (err) {
      throw mapError(err, false);
    }
  }

  /**
   * Gives `client`'s statement readTimeoutMs from now. The sweeper looks every quarter of that (at
   * most every second, at least every 50 ms), so a stalled statement fails at most that much past
   * its time; it stops on a sweep that finds nothing awaited, so an idle pool runs no timer.
   */
  private watch(client: PoolClient): void {
    this.awaiting.set(client, performance.now() + this.readTimeoutMs);
    this.startSweeper();
  }

  private startSweeper(): void {
    if (this.sweeper) return;
    const period = Math.max(50, Math.min(1000, this.readTimeoutMs / 4));
    this.sweeper = setInterval(() => this.sweep(), period);
    this.sweeper.unref();
  }

  private sweep(): void {
    if (!this.awaiting.size && !this.lane?.inFlight) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = performance.now();
    this.lane?.sweep(now);
    for (const [client, until] of this.awaiting) {
      if (until > now) continue;
      this.awaiting.delete(client);
      dropStalled(client, this.readTimeoutMs);
    }
  }

  async end(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await Promise.all([this.lane?.end(), this.pool.end().catch(() => undefined)]);
  }

  private waited(from: number, outcome: PoolWaitOutcome): void {
    const seconds = (performance.now() - from) / 1000;
    for (const listener of this.waitListeners) listener(seconds, outcome);
  }
}

function ignore(): void {}
