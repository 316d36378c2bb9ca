import { Client, ClientBase, ClientConfig } from 'pg';
import { BackendBootError } from '../../backend-boot-error';
import { PostgresNames } from './postgres-keys';
import { Migration, MIGRATIONS } from './migrations/migration-list';

/** TA_POSTGRES_MIGRATE: `auto` applies what the database lacks at boot; `off` only checks (a deploy job runs `teal-agent-server migrate`). */
export type MigrateMode = 'auto' | 'off';

export interface MigrationOutcome {
  schema: string;
  /** The schema's version before and after. */
  from: number;
  to: number;
}

/**
 * A schema with versions: its name, its schema_version table, the migrations this release knows (in
 * version order), the advisory lock its migrations run under (one per schema and per kind of
 * schema: the state store's and the audit archive's, src/archive/store/, never wait for each
 * other), and the words its boot errors use.
 */
export interface VersionedSchema {
  /** Checked against SCHEMA_NAME (postgres-keys.ts) by whoever built the names. */
  schema: string;
  /** Schema-qualified: `{schema}.schema_version`. */
  versionTable: string;
  migrations: readonly Migration[];
  lock: string;
  /** How an error names it: `PostgreSQL schema`, `archive schema`. */
  label: string;
  /** What an operator runs when `off` finds the schema behind this release. */
  offHint: string;
}

/**
 * Runs `work` on a connection of its own, not a pooled one (no statement timeout: a migration may
 * take longer than a turn's statement), then closes it without waiting for the server: Terminate is
 * written at once, and the close (~10 ms, the backend's exit) would only delay the boot. The state
 * store's `prepare` and the archive's `migrate` both migrate through it.
 */
export async function onOwnConnection<T>(config: ClientConfig, work: (client: ClientBase) => Promise<T>): Promise<T> {
  const client = new Client(config);
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await work(client);
  } finally {
    void client.end().catch(() => undefined);
  }
}

/** The state store's schema brought to this release's version (migrateVersioned). */
export async function migrateSchema(client: ClientBase, names: PostgresNames, mode: MigrateMode = 'auto'): Promise<MigrationOutcome> {
  const target: VersionedSchema = {
    schema: names.schema,
    versionTable: names.schemaVersion,
    migrations: MIGRATIONS,
    lock: `teal-agent-server migrate ${names.schema}`,
    label: 'PostgreSQL schema',
    offHint: 'run "teal-agent-server migrate" (TA_POSTGRES_MIGRATE=off)',
  };
  return migrateVersioned(client, target, mode);
}

/**
 * Brings the schema to this release's version, or checks it is there (`off`). The migrations run
 * under a session advisory lock of the schema's own, so N replicas starting together migrate once:
 * the first applies them, the others wait, then find nothing left to do. Each migration runs in its
 * own transaction with its schema_version row, so a failure leaves the schema at the last version
 * applied. A schema already at this version is only read (no lock, no DDL), so a role that may only
 * read and write the tables boots with `auto` too; DDL runs only when something is missing (and
 * `CREATE SCHEMA` only when the schema is: it needs CREATE on the database even with IF NOT
 * EXISTS). A database whose schema is newer than this release knows refuses the boot (an older
 * release must not write a layout it does not know), as does `off` with a schema behind.
 */
export async function migrateVersioned(client: ClientBase, target: VersionedSchema, mode: MigrateMode = 'auto'): Promise<MigrationOutcome> {
  const latest = target.migrations[target.migrations.length - 1]?.version ?? 0;
  const found = checkVersion(await currentVersion(client, target), target, latest, mode);
  if (found.from === latest || mode === 'off') return found;
  await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [target.lock]);
  try {
    // Read again under the lock: another replica may have migrated meanwhile.
    const from = checkVersion(await currentVersion(client, target), target, latest, mode).from;
    if (from === latest) return { schema: target.schema, from, to: from };
    const { rows } = await client.query<{ exists: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists', [target.schema]);
    if (!rows[0]?.exists) await client.query(`CREATE SCHEMA ${target.schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${target.versionTable} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const m of target.migrations.filter((x) => x.version > from)) await apply(client, target, m);
    return { schema: target.schema, from, to: latest };
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [target.lock]).catch(() => undefined);
  }
}

async function apply(client: ClientBase, target: VersionedSchema, m: Migration): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(m.sql(target.schema));
    await client.query(`INSERT INTO ${target.versionTable} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * The schema's version: 0 when it (or its schema_version table) does not exist yet. One round trip
 * on every boot after the first: the table is read, and only a missing one (or schema) is an error
 * that means version 0. Outside a transaction, so the failed statement leaves nothing to roll back.
 */
async function currentVersion(client: ClientBase, target: VersionedSchema): Promise<number> {
  try {
    const result = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${target.versionTable}`);
    return result.rows[0]?.v ?? 0;
  } catch (err) {
    if (MISSING.has((err as { code?: string }).code ?? '')) return 0;
    throw err;
  }
}

/** undefined_table, invalid_schema_name: what reading a schema_version table not made yet answers. */
const MISSING = new Set(['42P01', '3F000']);

function checkVersion(version: number, target: VersionedSchema, latest: number, mode: MigrateMode): MigrationOutcome {
  if (version > latest) {
    throw new BackendBootError(
      `${target.label} ${target.schema} is at version ${version}, newer than this teal-agent-server knows (${latest}): run a release that knows it`,
    );
  }
  if (mode === 'off' && version < latest) {
    throw new BackendBootError(`${target.label} ${target.schema} is at version ${version}, this teal-agent-server needs ${latest}: ${target.offHint}`);
  }
  return { schema: target.schema, from: version, to: version };
}
