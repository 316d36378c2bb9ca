#!/usr/bin/env node
/**
 * Brings the PostgreSQL schema to this release's version, for deployments that migrate from a
 * deploy job and boot the servers with TA_POSTGRES_MIGRATE=off: `teal-agent-server migrate` (or
 * `node dist/state/backends/postgres/migrate.cli.js`). Reads TA_POSTGRES_URL (required; PG*
 * variables fill in what it leaves out) and TA_POSTGRES_SCHEMA (default teal_agent). Safe to run
 * while servers run and from several jobs at once: the migrations take the same advisory lock as
 * a server's boot (postgres-migrate.ts).
 */
import { BackendBootError } from '../../backend-boot-error';
import { postgresBootError } from './postgres-errors';
import { DEFAULT_SCHEMA, SCHEMA_NAME } from './postgres-keys';
import { PostgresStateStore } from './postgres.state-store';

export async function migrateFromEnv(): Promise<void> {
  const url = process.env.TA_POSTGRES_URL || undefined;
  const schema = process.env.TA_POSTGRES_SCHEMA || DEFAULT_SCHEMA;
  if (!url) throw new BackendBootError('TA_POSTGRES_URL is required (a postgres:// connection string)');
  if (!SCHEMA_NAME.test(schema)) throw new BackendBootError(`TA_POSTGRES_SCHEMA must be a schema name of a-z 0-9 _ (got ${JSON.stringify(schema)})`);
  const store = new PostgresStateStore({ url, schema, sweepMs: 0 });
  try {
    const { from, to } = await store.prepare('auto').catch((err: unknown) => {
      throw postgresBootError(err, { url, schema });
    });
    process.stdout.write(
      from === to
        ? `PostgreSQL schema ${schema} is at version ${to}: nothing to migrate\n`
        : `PostgreSQL schema ${schema}: migrated from version ${from} to ${to}\n`,
    );
  } finally {
    await store.close();
  }
}

export function reportMigrateFailure(err: unknown): void {
  process.stderr.write(`Could not migrate the PostgreSQL schema: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}

if (require.main === module) migrateFromEnv().catch(reportMigrateFailure);
