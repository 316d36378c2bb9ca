import { ClientConfig } from 'pg';
import { PostgresPool } from '../../state/backends/postgres/postgres-pool';
import { ConnectionPoolStats, PooledStore, PoolWaitListener } from '../../state/connection-pool';
import { MigrateMode, MigrationOutcome, migrateVersioned, onOwnConnection } from '../../state/backends/postgres/postgres-migrate';
import { ArchiveEvent } from '../archive-event';
import { ArchivePort } from '../archive.port';
import { ArchiveContext } from './archive-context';
import { eraseStep, ErasureStep, PendingErasure, readPendingErasures, recordErasureRow } from './archive-erasure';
import { ArchiveUnavailableError, toArchiveError } from './archive-errors';
import { ARCHIVE_MIGRATIONS } from './archive-migrations.sql';
import { ArchiveNames, DEFAULT_ARCHIVE_SCHEMA } from './archive-names';
import { ArchiveFilter, ArchivedTask, ArchivePage, ArchivePageRequest, readEvents, readTaskInfo, readTimeline, TimelinePageRequest } from './archive-query';
import { purgeStep } from './archive-retention';
import { ArchivedEvent } from './archive-rows';
import { insertEventRows, markTaskDeleted, TaskNote } from './archive-write';

// The tables are documented in archive-names.ts, the mechanics in docs/archive.md; each concern
// has its room beside this facade, as the state store's backends do (src/state/backends/README.md).

export interface ArchiveStoreOptions {
  /** A libpq connection string (TA_ARCHIVE_URL); PG* variables fill in what it leaves out. */
  url: string;
  /** The schema of the archive's tables (default `teal_archive`); never the state store's. Tests use one per file. */
  schema?: string;
  /** Connections in the pool (default 4: the archiver's batches and the audit reads). */
  poolMax?: number;
  /** Bound, in ms, on waiting for a pooled connection, or for a new one to connect (default 2000). */
  acquireTimeoutMs?: number;
  /** The server's `statement_timeout` (default 10 000 ms: a batch of events or of deletions); the answer is waited for 1000 ms longer. */
  statementTimeoutMs?: number;
}

/** What a DBA sees in pg_stat_activity. */
export const ARCHIVE_APPLICATION_NAME = 'teal-agent-server archive';

/** Pages exportEvents reads, one at a time. */
const EXPORT_PAGE = 500;

/**
 * The PostgreSQL side of the audit archive (issue 23): append-only event rows under deterministic
 * ids (stored once however often and from however many replicas they are inserted), the tasks they
 * belong to, keyset-paged reads, and the bounded batches of retention and erasure.
 *
 * Every call is bounded (the wait for a connection, then the statement) and fails with
 * ArchiveUnavailableError when PostgreSQL cannot serve; every write is idempotent, so a call whose
 * answer was lost is retried as it is.
 */
export class ArchiveStore implements ArchivePort, PooledStore {
  private readonly pool: PostgresPool;
  private readonly config: ClientConfig;
  private readonly names: ArchiveNames;
  private readonly ctx: ArchiveContext;
  private closed = false;

  constructor(options: ArchiveStoreOptions) {
    this.names = new ArchiveNames(options.schema ?? DEFAULT_ARCHIVE_SCHEMA);
    const statementTimeoutMs = Math.max(1, Math.floor(options.statementTimeoutMs ?? 10_000));
    this.config = { connectionString: options.url, application_name: ARCHIVE_APPLICATION_NAME, connectionTimeoutMillis: options.acquireTimeoutMs ?? 2000 };
    this.pool = new PostgresPool(this.config, {
      max: options.poolMax ?? 4,
      statementTimeoutMs,
      // SET rather than a start-up parameter, which poolers in front of managed servers (PgBouncer) refuse.
      onConnect: async (client) => void (await client.query(`SET statement_timeout = ${statementTimeoutMs}`)),
    });
    this.ctx = { names: this.names, query: (what, text, values) => this.query(what, text, values) };
  }

  /** The schema the archive's tables are in. */
  get schema(): string {
    return this.names.schema;
  }

  /**
   * Brings the archive's schema to this release's version (`auto`) or checks it is there (`off`),
   * as the state store's (postgres-migrate.ts: its own schema_version table and its own advisory
   * lock, so N replicas migrate once), on a connection of its own without the statement timeout.
   * A schema newer than this release, or behind with `off`: BackendBootError; anything else as
   * node-postgres throws it, as PostgresStateStore.prepare does, so the boot words it with
   * postgresBootError (unreachable, login refused, no right to create the schema…).
   */
  async migrate(mode: MigrateMode = 'auto'): Promise<MigrationOutcome> {
    return onOwnConnection(this.config, (client) =>
      migrateVersioned(
        client,
        {
          schema: this.names.schema,
          versionTable: this.names.schemaVersion,
          migrations: ARCHIVE_MIGRATIONS,
          lock: `teal-agent-server archive migrate ${this.names.schema}`,
          label: 'Archive schema',
          offHint: 'let a replica migrate it (auto)',
        },
        mode,
      ),
    );
  }

  /**
   * Stores `events` (each once, however often and from however many clients it is inserted) and,
   * in the same statement, notes each task of `tasks` as archived up to its version (the highest
   * noted wins). One round trip; the caller bounds the batch (a task's events). Returns the events
   * inserted now (0 for those already stored).
   */
  async insertEvents(events: readonly ArchiveEvent[], tasks: readonly TaskNote[] = []): Promise<number> {
    return insertEventRows(this.ctx, events, tasks);
  }

  /** Notes the task as archived up to `note.version` (insertEvents with no events). */
  async noteTask(tenantId: string, taskId: string, note: Omit<TaskNote, 'tenantId' | 'taskId'>): Promise<void> {
    await insertEventRows(this.ctx, [], [{ ...note, tenantId, taskId }]);
  }

  /** The task left the live store at `at`: its rows stay, marked (archived_at, deleted_at). Returns the event rows marked now. */
  async markDeleted(tenantId: string, taskId: string, at: Date): Promise<number> {
    return markTaskDeleted(this.ctx, tenantId, taskId, at);
  }

  /** A tenant's events in time order (at, seq, ord, event_id), narrowed by `filter`; keyset pages (a bad cursor: ArchiveCursorError). */
  async listEvents(filter: ArchiveFilter, page: ArchivePageRequest): Promise<ArchivePage> {
    return readEvents(this.ctx, filter, page);
  }

  /** A task's events in timeline order (seq, ord, event_id: src/archive/timeline.ts), also after its deletion; keyset pages. */
  async taskTimeline(tenantId: string, taskId: string, page: TimelinePageRequest): Promise<ArchivePage> {
    return readTimeline(this.ctx, tenantId, taskId, page);
  }

  /** The archive's row of a task (its owner, and when it was deleted), or undefined. */
  async taskInfo(tenantId: string, taskId: string): Promise<ArchivedTask | undefined> {
    return readTaskInfo(this.ctx, tenantId, taskId);
  }

  /**
   * Every event listEvents would page through, one page in memory at a time (an NDJSON export):
   * a statement per page, none held open between them, so a slow reader holds no connection.
   */
  async *exportEvents(filter: ArchiveFilter, pageSize = EXPORT_PAGE): AsyncGenerator<ArchivedEvent> {
    let cursor: string | undefined;
    do {
      const page = await readEvents(this.ctx, filter, { limit: pageSize, cursor });
      yield* page.items;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /** One bounded retention step (archive-retention.ts): rows removed; call again until 0. */
  async purgeOlderThan(cutoff: Date, batchSize: number): Promise<number> {
    return purgeStep(this.ctx, cutoff, batchSize);
  }

  /** One bounded step of erasing a person from a tenant (archive-erasure.ts); when `done`, recordErasure. */
  async erasePrincipalBatch(tenantId: string, oid: string, batchSize: number): Promise<ErasureStep> {
    return eraseStep(this.ctx, tenantId, oid, batchSize);
  }

  /** Ends an erasure with its one content-free principal_erased row; undefined while rows of the person remain. */
  async recordErasure(tenantId: string, oid: string, eventId: string): Promise<ArchivedEvent | undefined> {
    return recordErasureRow(this.ctx, tenantId, oid, eventId);
  }

  /** Erasures started and never recorded (a replica stopped mid-way), oldest first: resume each. */
  async pendingErasures(limit = 100): Promise<PendingErasure[]> {
    return readPendingErasures(this.ctx, limit);
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  poolStats(): ConnectionPoolStats {
    return this.pool.stats();
  }

  onPoolWait(listener: PoolWaitListener): void {
    this.pool.onWait(listener);
  }

  /** One statement on a pooled connection, bounded and mapped (as PostgresStateStore's); a broken connection is discarded. */
  private async query<R>(what: string, text: string, values?: unknown[]): Promise<R[]> {
    if (this.closed) throw new ArchiveUnavailableError('The archive store is closed', undefined, true);
    return this.pool.query<R>(text, values, (err, unsent) => toArchiveError(err, what, unsent));
  }
}
