/**
 * PostgreSQL schema (one schema per deployment, TA_POSTGRES_SCHEMA, default `teal_agent`; tests use
 * one per file). Every table is keyed by tenant first, so every statement of the store names the
 * tenant and no row of another tenant can ever be read or written by it:
 *
 *   tasks          (tenant_id, task_id) PK   the task headers: version, write_id (TaskWrite.expectedWriteId),
 *                                            owner_id, session_id, position (creation order, from the
 *                                            sequence task_order), expires_at (epoch ms or null),
 *                                            lease_until (the lease's expiresAt, or null: the lease index),
 *                                            deleting (deletingAt is set), request_count, data (TaskRecord JSON),
 *                                            unarchived_at (when a store keeping the archive index last
 *                                            committed it, or null once the archive took it: migration 2)
 *                  (tenant_id, owner_id, session_id, position)   a session's tasks, oldest first; also an
 *                                            owner's sessions (a loose index scan: postgres-query.ts)
 *                  (lease_until, tenant_id, task_id) where lease_until is not null   the lease index
 *                  (unarchived_at, tenant_id, task_id) where unarchived_at is not null
 *                                                                                     the archive index
 *                  (expires_at) where expires_at is not null                          the expiry sweep
 *   requests       (tenant_id, task_id, seq) PK   request_id, data (RequestRecord JSON, any size: TOAST
 *                                            keeps it out of line, so no record is ever split)
 *                  (tenant_id, request_id)   the request-id index
 *   stream_events  (tenant_id, task_id, seq, n) PK   event, data (JSON): the stream log of the task's
 *                                            latest streamed request (postgres-stream.ts)
 *   idempotency_keys (tenant_id, key) PK     the claimed Idempotency-Keys (postgres-idempotency.ts;
 *                                            migration 3): expires_at (the entry's expiresAt, epoch ms),
 *                                            entry (IdempotencyEntry as jsonb). Apart from the tasks:
 *                                            a task's deletion or expiry leaves its entries
 *                  (expires_at)              the expiry sweep
 *   schema_version (version) PK              one row per migration applied (postgres-migrate.ts)
 *
 * JSON is kept as `text`, exactly as written (a DBA can still read it with `data::jsonb`), and
 * parsed here: a row that does not parse is reported corrupt and left as it is. (An Idempotency-Key
 * entry is jsonb, as the commit is given it: `commit_task` reads its key and expiry out of it, and
 * it is small. It is still read back as text and parsed here, so a hand-edited row is reported too.)
 * The columns beside it are what statements filter and order on. Writes go through the functions
 * the migrations create (`commit_task`, `delete_batch`, `append_stream`, `sweep_expired`, in
 * migrations/0001-init.sql.ts; `commit_task` with `p_archive` in 0002-archive-index.sql.ts; with
 * `p_claim`, and `sweep_expired` taking entries too, in 0003-idempotency-keys.sql.ts; `commit_task`'s
 * first path for the usual follow-on in 0004-commit-first-path.sql.ts): each is one
 * statement, so one round trip and one transaction, the way a Lua script is on Redis. Reads and
 * writes judge expiry by the database's own clock (`now_ms()`: `clock_timestamp()` in epoch ms),
 * which is the store's clock (PostgresStateStore.now() estimates it; an entry's expiresAt is on it).
 *
 * Expired tasks and entries read as missing at once and are deleted later, in bounded batches, by
 * one replica at a time (postgres-ttl.ts). There is no owner-sessions table: an owner's sessions are
 * the distinct session ids of its task rows, so the deletion of a session's last task removes it too.
 */

/** TA_POSTGRES_SCHEMA's rule: an unquoted lower-case identifier (so it needs no quoting anywhere). */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export const DEFAULT_SCHEMA = 'teal_agent';

/** The schema-qualified names statements use; the schema name is checked against SCHEMA_NAME first. */
export class PostgresNames {
  readonly tasks: string;
  readonly requests: string;
  readonly streamEvents: string;
  readonly idempotencyKeys: string;
  readonly schemaVersion: string;

  constructor(readonly schema: string) {
    if (!SCHEMA_NAME.test(schema)) throw new TypeError(`PostgreSQL schema name must match ${SCHEMA_NAME} (got ${JSON.stringify(schema)})`);
    this.tasks = `${schema}.tasks`;
    this.requests = `${schema}.requests`;
    this.streamEvents = `${schema}.stream_events`;
    this.idempotencyKeys = `${schema}.idempotency_keys`;
    this.schemaVersion = `${schema}.schema_version`;
  }

  /** A function of the schema (`commit_task` → `teal_agent.commit_task`). */
  fn(name: string): string {
    return `${this.schema}.${name}`;
  }

  /** How a corrupt row is named in StateCorruptError: table and key. */
  row(table: 'tasks' | 'requests' | 'stream_events' | 'idempotency_keys', ...key: (string | number)[]): string {
    return `${this.schema}.${table} (${key.map((k) => JSON.stringify(k)).join(', ')})`;
  }
}

/**
 * Cursor positions are printable ASCII (the API refuses any other cursor: src/tasks/views/cursor-check.ts),
 * so the text parts of a position are percent-encoded and joined with `/`.
 */
export function encodePosition(...parts: (string | number)[]): string {
  return Buffer.from(parts.map((p) => encodeURIComponent(String(p))).join('/')).toString('base64url');
}

/** The parts of a position; undefined when it is not one this store issued (a forged cursor). */
export function decodePosition(cursor: string, count: number): string[] | undefined {
  const parts = Buffer.from(cursor, 'base64url').toString('latin1').split('/');
  if (parts.length !== count) return undefined;
  try {
    return parts.map((p) => decodeURIComponent(p));
  } catch {
    return undefined;
  }
}
