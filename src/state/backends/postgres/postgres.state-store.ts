import { ClientBase, ClientConfig, QueryResult } from 'pg';
import { ConnectionPoolStats, PooledStore, PoolWaitListener } from '../../connection-pool';
import { ArchiveEntry, LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state.entities';
import { StateStoreUnavailableError } from '../../state.errors';
import { StoreClock } from '../../store-clock';
import { markArchivedEntries, readUnarchived } from './postgres-archive';
import { commitTask } from './postgres-commit';
import { CLOCK_MS_SQL, PostgresContext } from './postgres-context';
import { deleteTaskStep } from './postgres-delete';
import { toStateError } from './postgres-errors';
import { readIdempotencyEntry } from './postgres-idempotency';
import { DEFAULT_SCHEMA, PostgresNames } from './postgres-keys';
import { PostgresPool } from './postgres-pool';
import { readLapsedLeases } from './postgres-leases';
import { MigrateMode, migrateSchema, MigrationOutcome, onOwnConnection } from './postgres-migrate';
import { readOwnerSessions, readRequest, readRequests, readSessionTasks, readTask } from './postgres-query';
import { appendStreamEntries, readStreamEntries } from './postgres-stream';
import { ExpirySweep } from './postgres-ttl';

// The schema is documented in postgres-keys.ts, the writes in migrations/0001-init.sql.ts; each
// concern has its room beside this facade (src/state/backends/README.md).

export interface PostgresStateStoreOptions {
  /** A libpq connection string (`postgres://user:password@host:5432/db?sslmode=require`); PG* variables fill in what it leaves out. */
  url: string;
  /** The schema of the store's tables (default `teal_agent`); tests use one per file. */
  schema?: string;
  /** Connections in the pool (default 10). */
  poolMax?: number;
  /** Bound, in ms, on waiting for a pooled connection, or for a new one to connect (default 2000). */
  acquireTimeoutMs?: number;
  /** The server's `statement_timeout` (default 5000 ms); the answer is waited for 1000 ms longer, so a stalled connection is bounded too. */
  statementTimeoutMs?: number;
  /** How often expired tasks and Idempotency-Key entries are swept (postgres-ttl.ts; default 60 000 ms, 0: never). */
  sweepMs?: number;
  /** Rows one sweep step removes at most (default 500). */
  sweepBatch?: number;
  /** Keep the archive index (StateStore.listUnarchived; default false: commits leave its column alone). */
  archiveIndex?: boolean;
  /**
   * The commit as a named prepared statement, parsed and planned once per connection (default
   * true); false sends it unnamed, parsed and planned each time, for a pooler in front of the
   * database that cannot keep a connection's prepared statements (PgBouncer before 1.21 in
   * transaction mode).
   */
  preparedStatements?: boolean;
  /**
   * Commits pipelined on one of the pool's connections (default true; postgres-pipeline.ts): sent
   * at once, several in one socket write, each its own transaction. Not with `poolMax` 1.
   */
  pipeline?: boolean;
}

/** How far two replicas' estimates of the database's clock may disagree (as Redis: `clock_timestamp()` is exact to the microsecond). */
export const POSTGRES_CLOCK_SKEW_MS = 250;

/** What a DBA sees in pg_stat_activity. */
export const APPLICATION_NAME = 'teal-agent-server';

/**
 * PostgreSQL backend: a task header row, one row per request and a stream log table, all keyed by
 * tenant first; every write is one call of a function of the schema (one statement, so one round
 * trip and one transaction), whose compare-and-set is on the header's version and writeId.
 *
 * Every call is bounded: the wait for a pooled connection (acquireTimeoutMs), then the statement
 * (statementTimeoutMs); then it fails with StateStoreUnavailableError. A commit whose answer was
 * lost may still have been applied; retrying it with the same expected version then gets a
 * conflict, never a second write.
 */
export class PostgresStateStore extends StateStore implements PooledStore {
  private readonly pool: PostgresPool;
  private readonly config: ClientConfig;
  private readonly names: PostgresNames;
  /** The database's clock (`clock_timestamp()`): sampled on every new connection and by every commit. */
  private readonly clock = new StoreClock({ resolutionMs: 0.001 });
  override readonly clockSkewMs = POSTGRES_CLOCK_SKEW_MS;
  private readonly sweep: ExpirySweep;
  private closed = false;
  /** The names, clock and bounded call, as every room gets them (postgres-context.ts). */
  private readonly ctx: PostgresContext;

  constructor(options: PostgresStateStoreOptions) {
    super();
    this.names = new PostgresNames(options.schema ?? DEFAULT_SCHEMA);
    const statementTimeoutMs = Math.max(1, Math.floor(options.statementTimeoutMs ?? 5000));
    // Given explicitly, these win over PG* variables; the connection string wins over them (pg's order).
    this.config = { connectionString: options.url, application_name: APPLICATION_NAME, connectionTimeoutMillis: options.acquireTimeoutMs ?? 2000 };
    this.pool = new PostgresPool(this.config, {
      max: options.poolMax ?? 10,
      statementTimeoutMs,
      // Before a new connection serves anything: its statement timeout, and the clock, so the first
      // decision already has it.
      onConnect: (client) => this.prepareConnection(client, statementTimeoutMs),
      pipeline: options.pipeline ?? true,
    });
    this.ctx = {
      names: this.names,
      clock: this.clock,
      archiveIndex: options.archiveIndex ?? false,
      preparedStatements: options.preparedStatements ?? true,
      now: () => this.now(),
      query: (what, text, values, options) => this.query(what, text, values, options),
    };
    this.sweep = new ExpirySweep(this.ctx, { intervalMs: options.sweepMs ?? 60_000, batch: options.sweepBatch ?? 500 });
  }

  /** The schema the store's tables are in. */
  get schema(): string {
    return this.names.schema;
  }

  /**
   * At boot (state-store.factory.ts) and by `teal-agent-server migrate`: brings the schema to this
   * release's version (`auto`) or checks it is there (`off`), on a connection of its own without
   * the statement timeout (a migration may take longer than a turn's statement; see postgres-migrate.ts).
   */
  async prepare(mode: MigrateMode = 'auto'): Promise<MigrationOutcome> {
    const outcome = await onOwnConnection(this.config, (client) => migrateSchema(client, this.names, mode));
    this.sweep.start();
    return outcome;
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return readTask(this.ctx, tenantId, taskId);
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return readTask(this.ctx, tenantId, taskId, true);
  }

  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    return deleteTaskStep(this.ctx, tenantId, taskId, await this.getTaskForDeletion(tenantId, taskId), batchSize);
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    return appendStreamEntries(this.ctx, tenantId, taskId, seq, events, requestId);
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    return readStreamEntries(this.ctx, tenantId, taskId, seq, after);
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    return readOwnerSessions(this.ctx, tenantId, ownerId, page);
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    return readRequests(this.ctx, tenantId, taskId);
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    return readRequest(this.ctx, tenantId, requestId);
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    return readSessionTasks(this.ctx, tenantId, ownerId, sessionId, page);
  }

  override now(): number {
    return this.clock.now();
  }

  /** Idempotency-Key entries (postgres-idempotency.ts; claimed by the commit). */
  async getIdempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
    return readIdempotencyEntry(this.ctx, tenantId, key);
  }

  /** The lease index (postgres-leases.ts). */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    return readLapsedLeases(this.ctx, before, page);
  }

  /** The archive index (postgres-archive.ts). */
  async listUnarchived(before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
    return readUnarchived(this.ctx, before, page);
  }

  async markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
    return markArchivedEntries(this.ctx, entries);
  }

  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    return commitTask(this.ctx, tenantId, write);
  }

  /** One expiry sweep step now (postgres-ttl.ts): rows removed, or -1 when another replica is sweeping. */
  async sweepExpired(): Promise<number> {
    return this.sweep.step();
  }

  /** The pool's counts now, for the app's metrics. */
  poolStats(): ConnectionPoolStats {
    return this.pool.stats();
  }

  onPoolWait(listener: PoolWaitListener): void {
    this.pool.onWait(listener);
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.sweep.stop();
    await this.pool.end();
  }

  /**
   * A new connection's settings and the clock, in one round trip (one simple query of two
   * statements). The timeout is SET rather than sent as a start-up parameter, which connection
   * poolers in front of managed servers (PgBouncer) refuse.
   */
  private async prepareConnection(client: ClientBase, statementTimeoutMs: number): Promise<void> {
    const sentAt = Date.now();
    const results: unknown = await client.query(`SET statement_timeout = ${statementTimeoutMs}; SELECT ${CLOCK_MS_SQL} AS now`);
    const [, clock] = results as [QueryResult, QueryResult<{ now: number }>];
    this.clock.observe(clock.rows[0].now, sentAt, Date.now());
  }

  /**
   * Waits (boundedly) for a pooled connection, runs one statement on it, and maps failures to the
   * contract's errors: a connection never had means the statement was never sent (`unsent`). A
   * connection that failed is discarded rather than put back.
   */
  private async query<R>(what: string, text: string, values?: unknown[], options: { name?: string; pipelined?: boolean } = {}): Promise<R[]> {
    if (this.closed) throw new StateStoreUnavailableError('PostgreSQL state store is closed', undefined, true);
    const mapError = (err: unknown, unsent: boolean) => toStateError(err, what, unsent);
    if (options.pipelined) return this.pool.queryPipelined<R>(text, values, mapError, options.name);
    return this.pool.query<R>(text, values, mapError, options.name);
  }
}
