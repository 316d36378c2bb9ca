import { MIGRATION_0001 } from './0001-init.sql';
import { MIGRATION_0002 } from './0002-archive-index.sql';
import { MIGRATION_0003 } from './0003-idempotency-keys.sql';
import { MIGRATION_0004 } from './0004-commit-first-path.sql';

/** One versioned migration: `sql` is given the schema (checked against SCHEMA_NAME) and runs in one transaction. */
export interface Migration {
  version: number;
  name: string;
  sql: (schema: string) => string;
}

/** Every migration this release knows, in version order (1, 2, …, no gaps): postgres-migrate.ts applies the ones a database lacks. */
export const MIGRATIONS: readonly Migration[] = [MIGRATION_0001, MIGRATION_0002, MIGRATION_0003, MIGRATION_0004];

/** The schema version this release needs: the last migration's. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;
