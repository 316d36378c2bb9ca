import { SCHEMA_NAME } from '../../state/backends/postgres/postgres-keys';

/**
 * The audit archive's tables (issue 23, docs/archive.md), in a PostgreSQL schema of their own
 * (default `teal_archive`; tests use one per file), never the state store's: the two have their own
 * schema_version tables and migration locks, so either may live in the same database as the other.
 * Every read names the tenant first, so no statement of the archive reads another tenant's rows.
 *
 *   events    (event_id) PK             one row per ArchiveEvent (src/archive/archive-event.ts): its
 *                                       deterministic id, so an insert of an event already stored
 *                                       does nothing (ON CONFLICT DO NOTHING); pos (an identity:
 *                                       insertion order), tenant_id, owner_id, session_id, task_id,
 *                                       request_id (null on task-, session- and principal-level
 *                                       rows), agent_name, agent_version, type, at, seq, ord, payload
 *                                       (jsonb), archived_at (set when the task was deleted from the
 *                                       live store: the rows stay)
 *             (tenant_id, at, seq, ord, event_id)             a tenant's events in time order (listEvents)
 *             (tenant_id, owner_id, at, seq, ord, event_id)   an owner's events; the erasure's batches
 *             (tenant_id, session_id, at, seq, ord, event_id) a session's events
 *             (tenant_id, task_id, seq, ord, event_id)  a task's timeline (src/archive/timeline.ts); markDeleted
 *             (at)                                      the retention's batches
 *   tasks     (tenant_id, task_id) PK   owner_id, session_id, agent (`name:version`), archived_version
 *                                       (the highest task version whose events are stored: the
 *                                       catch-up's mark), deleted_at (the task left the live store)
 *             (tenant_id, owner_id)                     the erasure's batches
 *             (deleted_at) where not null              the retention
 *   erasures  (tenant_id, oid) PK       started_at, done_at (null while under way: pendingErasures),
 *                                       events_deleted, tasks_deleted (summed over the batches)
 *   schema_version (version) PK         one row per migration applied (archive-migrate.ts)
 *
 * A type filter has no index of its own: it rides on the tenant's, owner's, session's or task's.
 */
export const DEFAULT_ARCHIVE_SCHEMA = 'teal_archive';

/** The schema-qualified names statements use; the schema name is checked against SCHEMA_NAME first. */
export class ArchiveNames {
  readonly events: string;
  readonly tasks: string;
  readonly erasures: string;
  readonly schemaVersion: string;

  constructor(readonly schema: string) {
    if (!SCHEMA_NAME.test(schema)) throw new TypeError(`Archive schema name must match ${SCHEMA_NAME} (got ${JSON.stringify(schema)})`);
    this.events = `${schema}.events`;
    this.tasks = `${schema}.tasks`;
    this.erasures = `${schema}.erasures`;
    this.schemaVersion = `${schema}.schema_version`;
  }
}
