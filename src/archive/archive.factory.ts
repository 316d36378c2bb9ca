import type { EnvConfig } from '../config/env.config';
import { BackendBootError } from '../state/backend-boot-error';
import { postgresBootError } from '../state/backends/postgres/postgres-errors';
import type { ArchivePort } from './archive.port';

/**
 * The audit archive TA_ARCHIVE_URL names, migrated (its own schema, TA_ARCHIVE_SCHEMA, under its own
 * lock, so replicas starting together migrate once), or undefined when it is unset. An archive that
 * cannot be reached or migrated stops the boot with one line naming it (never its password): a
 * server told to keep an audit trail does not start without one.
 */
export async function createArchive(config: EnvConfig['archive']): Promise<(ArchivePort & { migrate(): Promise<unknown> }) | undefined> {
  if (!config) return undefined;
  // Loaded only when configured, as the state backends are.
  const { ArchiveStore } = require('./store/archive.store') as typeof import('./store/archive.store');
  const archive = new ArchiveStore({ url: config.url, schema: config.schema, poolMax: config.poolMax, statementTimeoutMs: config.statementTimeoutMs });
  try {
    await archive.migrate();
    return archive;
  } catch (err) {
    await archive.close().catch(() => undefined);
    const cause = postgresBootError(err, { url: config.url, schema: config.schema });
    throw new BackendBootError(`Audit archive (TA_ARCHIVE_URL): ${cause.message}`, err);
  }
}
