import { IdempotencyEntry } from '../../state.entities';
import { parseRecord } from '../parse-record.util';
import { PostgresContext } from './postgres-context';

/**
 * Idempotency-Key entries (StateStore.getIdempotencyEntry): rows of idempotency_keys
 * (migrations/0003-idempotency-keys.sql.ts), claimed by `commit_task` in the commit they guard.
 * One statement; an entry whose expiresAt has passed by the database's clock reads as missing, as
 * it does to the commit, which may claim its key again (the sweep removes it meanwhile).
 */
export async function readIdempotencyEntry(ctx: PostgresContext, tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
  const { names } = ctx;
  const rows = await ctx.query<{ entry: string }>(
    names.row('idempotency_keys', tenantId, key),
    `SELECT k.entry::text AS entry FROM ${names.idempotencyKeys} k
      WHERE k.tenant_id = $1 AND k.key = $2 AND k.expires_at > ${names.fn('now_ms')}()`,
    [tenantId, key],
  );
  return rows.length ? parseRecord<IdempotencyEntry>(names.row('idempotency_keys', tenantId, key), rows[0].entry) : undefined;
}
