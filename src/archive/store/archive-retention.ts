import { ArchiveContext } from './archive-context';
import { checkBatch } from './archive-erasure';

/**
 * One bounded step of the retention (TA_ARCHIVE_RETENTION_DAYS): at most `batch` event rows older
 * than `cutoff` (every type, erasure records included), oldest first, and at most `batch` tasks
 * rows of tasks deleted before `cutoff` that no event row is left of. Rows another replica is
 * purging at the same moment are skipped (SKIP LOCKED), not waited for. Returns the rows removed
 * (events and tasks together): the caller calls again until it returns 0.
 */
export async function purgeStep(ctx: ArchiveContext, cutoff: Date, batch: number): Promise<number> {
  checkBatch(batch);
  const { events, tasks } = ctx.names;
  const rows = await ctx.query<{ removed: number }>(
    'purgeOlderThan',
    `WITH old AS (
  SELECT event_id FROM ${events} WHERE at < $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM ${events} e USING old WHERE e.event_id = old.event_id RETURNING 1
), old_tasks AS (
  SELECT tenant_id, task_id FROM ${tasks} t
  WHERE deleted_at < $1 AND NOT EXISTS (SELECT 1 FROM ${events} e WHERE e.tenant_id = t.tenant_id AND e.task_id = t.task_id)
  ORDER BY deleted_at LIMIT $2 FOR UPDATE SKIP LOCKED
), tasks_gone AS (
  DELETE FROM ${tasks} t USING old_tasks o WHERE t.tenant_id = o.tenant_id AND t.task_id = o.task_id RETURNING 1
)
SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM tasks_gone))::integer AS removed`,
    [cutoff, batch],
  );
  return rows[0]?.removed ?? 0;
}
