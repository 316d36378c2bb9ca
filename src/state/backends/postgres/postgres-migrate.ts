import type { ClientBase } from 'pg';
import { BackendBootError } from '../../backend-boot-error';
import { PostgresNames } from './postgres-keys';
import { Migration, MIGRATIONS, SCHEMA_VERSION } from './migrations/migration-list';

/** TA_POSTGRES_MIGRATE: `auto` applies what the database lacks at boot; `off` only checks (a deploy job runs `teal-agent-server migrate`). */
export type MigrateMode = 'auto' | 'off';

export interface MigrationOutcome {
  schema: string;
  /** The schema's version before and after. */
  from: number;
  to: number;
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
export async function migrateSchema(client: ClientBase, names: PostgresNames, mode: MigrateMode = 'auto'): Promise<MigrationOutcome> {
  const found = checkVersion(await currentVersion(client, names), names, mode);
  if (found.from === SCHEMA_VERSION || mode === 'off') return found;
  const lock = `teal-agent-server migrate ${names.schema}`;
  await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lock]);
  try {
    // Read again under the lock: another replica may have migrated meanwhile.
    const from = checkVersion(await currentVersion(client, names), names, mode).from;
    if (from === SCHEMA_VERSION) return { schema: names.schema, from, to: from };
    const { rows } = await client.query<{ exists: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists', [names.schema]);
    if (!rows[0]?.exists) await client.query(`CREATE SCHEMA ${names.schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${names.schemaVersion} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const m of MIGRATIONS.filter((x) => x.version > from)) await apply(client, names, m);
    return { schema: names.schema, from, to: SCHEMA_VERSION };
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lock]).catch(() => undefined);
  }
}

async function apply(client: ClientBase, names: PostgresNames, m: Migration): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(m.sql(names.schema));
    await client.query(`INSERT INTO ${names.schemaVersion} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** The schema's version: 0 when it (or its schema_version table) does not exist yet. */
async function currentVersion(client: ClientBase, names: PostgresNames): Promise<number> {
  const { rows } = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [names.schemaVersion]);
  if (!rows[0]?.exists) return 0;
  const result = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${names.schemaVersion}`);
  return result.rows[0]?.v ?? 0;
}

function checkVersion(version: number, names: PostgresNames, mode: MigrateMode): MigrationOutcome {
  if (version > SCHEMA_VERSION) {
    throw new BackendBootError(
      `PostgreSQL schema ${names.schema} is at version ${version}, newer than this teal-agent-server knows (${SCHEMA_VERSION}): run a release that knows it`,
    );
  }
  if (mode === 'off' && version < SCHEMA_VERSION) {
    throw new BackendBootError(
      `PostgreSQL schema ${names.schema} is at version ${version}, this teal-agent-server needs ${SCHEMA_VERSION}: run "teal-agent-server migrate" (TA_POSTGRES_MIGRATE=off)`,
    );
  }
  return { schema: names.schema, from: version, to: version };
}
