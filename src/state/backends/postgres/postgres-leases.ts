import { LeaseEntry, Page } from '../../state-store';
import { PostgresContext } from './postgres-context';
import { decodePosition, encodePosition } from './postgres-keys';

/**
 * The lease index (StateStore.listLapsedLeases): the headers holding a lease, by the partial index
 * on (lease_until, tenant_id, task_id), keyset-paged on that triple. The commit keeps `lease_until`
 * in step with the header (it is a column of the same row), so the index follows every commit.
 * Expired headers are skipped in the statement (the sweep removes them), so a page is never short
 * because of them, and cost is the page plus the expired entries on the way.
 */
export async function readLapsedLeases(ctx: PostgresContext, before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
  const { names } = ctx;
  const limit = Math.max(1, Math.floor(page.limit));
  const position = page.cursor ? decodePosition(page.cursor, 3) : undefined;
  const at = position && Number.isFinite(Number(position[0])) ? position : undefined;
  const rows = await ctx.query<{ tenant_id: string; task_id: string; lease_until: number }>(
    `${names.tasks} lease index`,
    `SELECT h.tenant_id, h.task_id, h.lease_until FROM ${names.tasks} h
      WHERE h.lease_until IS NOT NULL AND h.lease_until <= $1
        AND ($2::double precision IS NULL OR (h.lease_until, h.tenant_id, h.task_id) > ($2, $3::text, $4::text))
        AND (h.expires_at IS NULL OR h.expires_at > ${names.fn('now_ms')}())
      ORDER BY h.lease_until, h.tenant_id, h.task_id LIMIT $5`,
    [before, at ? Number(at[0]) : null, at?.[1] ?? null, at?.[2] ?? null, limit + 1],
  );
  const items = rows.slice(0, limit).map((r) => ({ tenantId: r.tenant_id, taskId: r.task_id, expiresAt: r.lease_until }));
  if (rows.length <= limit) return { items };
  const last = items[limit - 1];
  return { items, nextCursor: encodePosition(last.expiresAt, last.tenantId, last.taskId) };
}
