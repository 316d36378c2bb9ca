import type { Migration } from '../../state/backends/postgres/migrations/migration-list';

/**
 * Migration 1 of the archive's schema (the tables are documented in archive-names.ts). `s` is the
 * schema, already checked against SCHEMA_NAME. A migration is never edited once released: a change
 * is a new entry in ARCHIVE_MIGRATIONS.
 */
const ARCHIVE_0001: Migration = {
  version: 1,
  name: 'archive init',
  sql: (s: string) => `
CREATE TABLE ${s}.events (
  event_id      text PRIMARY KEY,
  pos           bigint GENERATED ALWAYS AS IDENTITY,
  tenant_id     text NOT NULL,
  owner_id      text NOT NULL,
  session_id    text NOT NULL,
  task_id       text NOT NULL,
  request_id    text,
  agent_name    text NOT NULL,
  agent_version text NOT NULL,
  type          text NOT NULL,
  at            timestamptz NOT NULL,
  seq           integer NOT NULL,
  ord           integer NOT NULL,
  payload       jsonb NOT NULL,
  archived_at   timestamptz
);
CREATE INDEX events_tenant_at ON ${s}.events (tenant_id, at, seq, ord, event_id);
CREATE INDEX events_owner_at ON ${s}.events (tenant_id, owner_id, at, seq, ord, event_id);
CREATE INDEX events_session_at ON ${s}.events (tenant_id, session_id, at, seq, ord, event_id);
CREATE INDEX events_task ON ${s}.events (tenant_id, task_id, seq, ord, event_id);
CREATE INDEX events_at ON ${s}.events (at);

CREATE TABLE ${s}.tasks (
  tenant_id        text NOT NULL,
  task_id          text NOT NULL,
  owner_id         text NOT NULL,
  session_id       text NOT NULL,
  agent            text NOT NULL,
  archived_version integer NOT NULL,
  deleted_at       timestamptz,
  PRIMARY KEY (tenant_id, task_id)
);
CREATE INDEX tasks_owner ON ${s}.tasks (tenant_id, owner_id);
CREATE INDEX tasks_deleted ON ${s}.tasks (deleted_at) WHERE deleted_at IS NOT NULL;

CREATE TABLE ${s}.erasures (
  tenant_id      text NOT NULL,
  oid            text NOT NULL,
  started_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  done_at        timestamptz,
  events_deleted bigint NOT NULL DEFAULT 0,
  tasks_deleted  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, oid)
);
CREATE INDEX erasures_pending ON ${s}.erasures (started_at) WHERE done_at IS NULL;
`,
};

/** Every migration of the archive's schema this release knows, in version order (1, 2, …, no gaps). */
export const ARCHIVE_MIGRATIONS: readonly Migration[] = [ARCHIVE_0001];

/** The archive schema's version this release needs. */
export const ARCHIVE_SCHEMA_VERSION = ARCHIVE_MIGRATIONS[ARCHIVE_MIGRATIONS.length - 1]!.version;
