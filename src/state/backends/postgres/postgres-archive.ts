import { ArchiveEntry, Page } from '../../state-store';
import { PostgresContext } from './postgres-context';
import { decodePosition, encodePosition } from './postgres-keys';

/**
 * The archive index (StateStore.listUnarchived): the headers whose `unarchived_at` is set, by the
 * partial index on (unarchived_at, tenant_id, task_id) (migrations/0002-archive-index.sql.ts),
 * keyset-paged on that triple. The commit sets the column in the same statement as the header
 * (it is a column of the same row), and the row's deletion unlists it. The listed version is the
 * row's: every commit of a store keeping the index moves the entry to its own time. Expired
 * headers are skipped in the statement (the sweep removes them), as the lease index does.
 */
export async function readUnarchived(ctx: PostgresContext, before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
  if (!ctx.archiveIndex) return { items: [] };
  const { names } = ctx;
  const limit = Math.max(1, Math.floor(page.limit));
  const position = page.cursor ? decodePosition(page.cursor, 3) : undefined;
  const at = position && Number.isFinite(Number(position[0])) ? position : undefined;
  const rows = await ctx.query<{ tenant_id: string; task_id: string; version: string; unarchived_at: number }>(
    `${names.tasks} archive index`,
    `SELECT h.tenant_id, h.task_id, h.version, h.unarchived_at FROM ${names.tasks} h
      WHERE h.unarchived_at IS NOT NULL AND h.unarchived_at <= $1
        AND ($2::double precision IS NULL OR (h.unarchived_at, h.tenant_id, h.task_id) > ($2, $3::text, $4::text))
        AND (h.expires_at IS NULL OR h.expires_at > ${names.fn('now_ms')}())
      ORDER BY h.unarchived_at, h.tenant_id, h.task_id LIMIT $5`,
    [before, at ? Number(at[0]) : null, at?.[1] ?? null, at?.[2] ?? null, limit + 1],
  );
  const items = rows.slice(0, limit).map((r) => ({ tenantId: r.tenant_id, taskId: r.task_id, version: Number(r.version), changedAt: r.unarchived_at }));
  if (rows.length <= limit) return { items };
  const last = items[limit - 1];
  return { items, nextCursor: encodePosition(last.changedAt, last.tenantId, last.taskId) };
}

/**
 * markArchived: one statement for the batch. It locks the listed rows whose version is at or below
 * the one given, in key order (two batches over the same tasks wait for each other rather than
 * deadlock), then unlists them; a row a later commit moved to a higher version stays listed.
 */
export async function markArchivedEntries(ctx: PostgresContext, entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
  if (!ctx.archiveIndex || !entries.length) return;
  const { names } = ctx;
  await ctx.query(
    `${names.tasks} archive index`,
    `WITH taken AS (
       SELECT h.tenant_id, h.task_id FROM ${names.tasks} h
         JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS u(tenant_id, task_id, version)
           ON h.tenant_id = u.tenant_id AND h.task_id = u.task_id
        WHERE h.unarchived_at IS NOT NULL AND h.version <= u.version
        ORDER BY h.tenant_id, h.task_id FOR UPDATE OF h)
     UPDATE ${names.tasks} h SET unarchived_at = NULL FROM taken
      WHERE h.tenant_id = taken.tenant_id AND h.task_id = taken.task_id`,
    [entries.map((e) => e.tenantId), entries.map((e) => e.taskId), entries.map((e) => Math.floor(e.version))],
  );
}
