import { Client, ClientBase, ClientConfig, QueryResult, QueryResultRow } from 'pg';
import { brokenConnection } from './postgres-errors';
import { dropStalled, queryOn, socketOf } from './postgres-query-on';

/** Statements awaiting their answers on the lane at most; past it a statement takes a pooled connection. */
export const PIPELINE_MAX_IN_FLIGHT = 32;
/**
 * How long the lane's oldest unanswered statement may have been waiting for a new one to be sent
 * behind it (ms). A statement waiting on a row lock another session holds stalls every statement
 * behind it on the connection (a sent statement cannot be taken back): past this age the lane
 * takes nothing more, and statements go through the pool, so such a stall holds at most what was
 * sent in its first moments.
 */
export const PIPELINE_MAX_HEAD_AGE_MS = 50;
/** After the lane's connection failed or could not be made, how long before it is tried again (ms). */
export const PIPELINE_RETRY_MS = 1000;

/**
 * One connection on which the store's commits are pipelined (node-postgres' `pipeline` mode): each
 * statement is sent at once without waiting for the answers to those before it, and every
 * statement sent in one turn of the event loop leaves in one socket write (the socket is corked
 * until its end: setImmediate). Each is its own transaction (its own Sync): one failing leaves the others
 * alone, exactly as on a pooled connection. The database's backend serving the lane answers a
 * queue of statements instead of sleeping and being woken for each, and no statement waits for a
 * pooled connection (docs/performance.md, The PostgreSQL turn).
 *
 * The lane only takes a statement when it is healthy and flowing (`take`): connected, fewer than
 * PIPELINE_MAX_IN_FLIGHT unanswered, the oldest sent less than PIPELINE_MAX_HEAD_AGE_MS ago;
 * otherwise the caller uses the pool. Answers are bounded as on the pool (`readTimeoutMs`, checked
 * by the pool's sweeper through `sweep`): past it the connection is dropped, and every statement
 * on it fails as on a broken connection (a commit's outcome is then read back by the writer). A
 * connection that broke is replaced on a later call, at most once a second.
 */
export class PipelineLane {
  /** The lane's connection and the send times (performance.now()) of its statements awaiting answers, oldest first: answers come in order. */
  private conn?: { client: Client; sent: number[]; corked: boolean };
  private opening = false;
  /** When the last attempt to connect failed, or the connection broke (performance.now()). */
  private failedAt = -Infinity;
  private closed = false;

  constructor(
    private readonly config: ClientConfig,
    private readonly options: { readTimeoutMs: number; onConnect(client: ClientBase): Promise<void>; onSend(): void },
  ) {}

  /** Whether the lane holds a connection (open or being opened), for the pool's counts. */
  get open(): boolean {
    return this.conn !== undefined || this.opening;
  }

  /** Statements awaiting answers on the lane's connection. */
  get inFlight(): number {
    return this.conn?.sent.length ?? 0;
  }

  /**
   * Sends one statement on the lane and returns its answer, or returns undefined (nothing sent)
   * when the lane cannot take it now: the caller then uses the pool. A lane without a connection
   * starts making one and takes nothing until it is ready.
   */
  take<R>(text: string, values: unknown[] | undefined, name?: string): Promise<QueryResult<R & QueryResultRow>> | undefined {
    const conn = this.conn;
    if (!conn) {
      this.connect();
      return undefined;
    }
    const { sent } = conn;
    const now = performance.now();
    if (sent.length >= PIPELINE_MAX_IN_FLIGHT || (sent.length > 0 && now - sent[0] > PIPELINE_MAX_HEAD_AGE_MS)) return undefined;
    this.cork(conn);
    sent.push(now);
    this.options.onSend();
    return queryOn<R>(conn.client, text, values, name).then(
      (result) => {
        sent.shift();
        return result;
      },
      (err: unknown) => {
        sent.shift();
        if (brokenConnection(err)) this.drop(conn.client);
        throw err;
      },
    );
  }

  /** Called by the pool's sweeper: drops the connection when its oldest statement is unanswered past the read timeout. */
  sweep(now: number): void {
    const conn = this.conn;
    if (conn && conn.sent.length > 0 && now - conn.sent[0] > this.options.readTimeoutMs) {
      dropStalled(conn.client, this.options.readTimeoutMs);
      this.drop(conn.client);
    }
  }

  async end(): Promise<void> {
    this.closed = true;
    const conn = this.conn;
    this.conn = undefined;
    await conn?.client.end().catch(() => undefined);
  }

  private connect(): void {
    if (this.opening || this.closed || performance.now() - this.failedAt < PIPELINE_RETRY_MS) return;
    this.opening = true;
    const client = new Client({ ...this.config, keepAlive: true, pipeline: true } as ClientConfig);
    // A connection that breaks reports it here as well as to its statements.
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    void (async () => {
      try {
        await client.connect();
        await this.options.onConnect(client);
        if (this.closed) await client.end();
        else this.conn = { client, sent: [], corked: false };
      } catch {
        this.failedAt = performance.now();
        void client.end().catch(() => undefined);
      } finally {
        this.opening = false;
      }
    })();
  }

  /** Stops sending on `client` (broken, ended or timed out): the statements on it fail on their own; a new one is made later. */
  private drop(client: Client): void {
    if (this.conn?.client !== client) return;
    this.conn = undefined;
    this.failedAt = performance.now();
    void client.end().catch(() => undefined);
  }

  /** Holds the socket's writes until this turn of the event loop ends, so the statements sent until then leave in one write. */
  private cork(conn: { client: Client; corked: boolean }): void {
    if (conn.corked) return;
    const stream = socketOf(conn.client);
    if (!stream) return;
    conn.corked = true;
    stream.cork();
    // setImmediate: after every callback of this turn of the event loop (several requests' commits
    // under load), not after this one alone, as a tick would (RedisWire.write measures the same).
    setImmediate(() => {
      conn.corked = false;
      stream.uncork();
    });
  }
}
