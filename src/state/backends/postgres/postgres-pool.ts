import { ClientBase, ClientConfig, Pool, PoolClient, Query, QueryResult, QueryResultRow } from 'pg';
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

  constructor(
    config: ClientConfig,
    private readonly options: PostgresPoolOptions,
  ) {
    this.readTimeoutMs = options.statementTimeoutMs + 1000;
    this.pool = new Pool({
      ...config,
      max: options.max,
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

  /**
   * One statement on a pooled connection; what node-postgres throws goes through `mapError`
   * (`unsent`: no connection was had). With `name`, a named prepared statement: parsed and planned
   * once per connection, then only bound and run (node-postgres remembers, per connection, the
   * names it prepared; one name must always come with one text).
   */
  async query<R>(text: string, values: unknown[] | undefined, mapError: (err: unknown, unsent: boolean) => unknown, name?: string): Promise<R[]> {
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
   * Gives `client`'s statement readTimeoutMs from now. The sweeper looks every quarter of that (at
   * most every second, at least every 50 ms), so a stalled statement fails at most that much past
   * its time; it stops on a sweep that finds nothing awaited, so an idle pool runs no timer.
   */
  private watch(client: PoolClient): void {
    this.awaiting.set(client, performance.now() + this.readTimeoutMs);
    if (this.sweeper) return;
    const period = Math.max(50, Math.min(1000, this.readTimeoutMs / 4));
    this.sweeper = setInterval(() => this.sweep(), period);
    this.sweeper.unref();
  }

  private sweep(): void {
    if (!this.awaiting.size) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = performance.now();
    for (const [client, until] of this.awaiting) {
      if (until > now) continue;
      this.awaiting.delete(client);
      dropStalled(client, this.readTimeoutMs);
    }
  }

  async end(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.pool.end().catch(() => undefined);
  }

  private waited(from: number, outcome: PoolWaitOutcome): void {
    const seconds = (performance.now() - from) / 1000;
    for (const listener of this.waitListeners) listener(seconds, outcome);
  }
}

function ignore(): void {}

/** node-postgres' client, with the socket its connection reads (what its own query_timeout destroys). */
type ClientSocket = PoolClient & { connection?: { stream?: { destroy(err?: Error): void } } };

/** Ends a statement whose answer did not come in time: its connection is dropped, so the statement fails. */
function dropStalled(client: PoolClient, ms: number): void {
  (client as ClientSocket).connection?.stream?.destroy(new Error(`Query read timeout: no answer within ${ms} ms`));
}

/**
 * `client.query` with a callback, not its promise: without one node-postgres sets a closure on the
 * statement's Query after making it, and in this Node (V8 13) a closure stored into a field after the
 * object was made kept the statement's text, values and result alive through the young
 * collections: promoted to the old generation on every statement (docs/performance.md, What V8
 * promotes). Given to the constructor, it is not. The Query is made from the text, and named after:
 * given a config object instead, node-postgres copies it property by property
 * (`Object.getOwnPropertyDescriptors`), ~1 % of a PostgreSQL turn in a CPU profile.
 */
function queryOn<R>(client: PoolClient, text: string, values: unknown[] | undefined, name?: string): Promise<QueryResult<R & QueryResultRow>> {
  return new Promise((resolve, reject) => {
    const query = new Query<R & QueryResultRow>(text, values ?? [], (err: Error | undefined, res: unknown) =>
      err ? reject(err) : resolve(res as QueryResult<R & QueryResultRow>),
    );
    if (name !== undefined) (query as Query & { name?: string }).name = name;
    client.query(query);
  });
}
