import { ArchiveContext } from './archive-context';
import { ArchivedEvent, EVENT_COLUMNS, EventRow, eventOf } from './archive-rows';

/** One step of an erasure: the rows it removed, and whether it found fewer than a batch (nothing may be left: recordErasure checks). */
export interface ErasureStep {
  done: boolean;
  /** Event rows and task rows removed by this step. */
  deleted: number;
  events: number;
  tasks: number;
}

/** An erasure started and not yet recorded (a replica stopped mid-way): call erasePrincipalBatch, then recordErasure, again. */
export interface PendingErasure {
  tenantId: string;
  oid: string;
  startedAt: string;
  eventsDeleted: number;
  tasksDeleted: number;
}

/** The type of the row that records an erasure: the erasure never removes it (it keeps no content). */
export const ERASURE_TYPE = 'principal_erased';

/**
 * One bounded step of erasing a person (`oid`, the owner of tasks) from a tenant's archive: at most
 * `batch` of their event rows (earlier erasure records excepted) and at most `batch` of their tasks
 * rows, in one statement that also adds the counts to their erasures row (created by the first
 * step; a step after a finished erasure that finds rows again starts a new one, counts from 0, and
 * one that finds none leaves the finished one as it is: a replica's late step of an erasure another
 * replica just recorded does not reopen it). Rows of other owners are
 * never touched, also when they name the person in a payload (an approver's `by`). Resumable: the
 * erasures row stays pending until recordErasure, so a step that never finished (a crash) is
 * simply called again.
 */
export async function eraseStep(ctx: ArchiveContext, tenantId: string, oid: string, batch: number): Promise<ErasureStep> {
  checkBatch(batch);
  const { events, tasks, erasures } = ctx.names;
  const rows = await ctx.query<{ events: number; tasks: number }>(
    'erasePrincipalBatch',
    `WITH victims AS (
  SELECT event_id FROM ${events} WHERE tenant_id = $1 AND owner_id = $2 AND type <> '${ERASURE_TYPE}' ORDER BY at, seq, ord, event_id LIMIT $3 FOR UPDATE
), gone AS (
  DELETE FROM ${events} e USING victims v WHERE e.event_id = v.event_id RETURNING 1
), task_victims AS (
  SELECT task_id FROM ${tasks} WHERE tenant_id = $1 AND owner_id = $2 ORDER BY task_id LIMIT $3 FOR UPDATE
), tasks_gone AS (
  DELETE FROM ${tasks} t USING task_victims v WHERE t.tenant_id = $1 AND t.task_id = v.task_id RETURNING 1
), counts AS (
  SELECT (SELECT count(*) FROM gone)::integer AS events, (SELECT count(*) FROM tasks_gone)::integer AS tasks
), noted AS (
  INSERT INTO ${erasures} AS x (tenant_id, oid, events_deleted, tasks_deleted)
  SELECT $1, $2, events, tasks FROM counts
  ON CONFLICT (tenant_id, oid) DO UPDATE SET
    started_at = CASE WHEN x.done_at IS NOT NULL AND excluded.events_deleted + excluded.tasks_deleted > 0 THEN clock_timestamp() ELSE x.started_at END,
    events_deleted = CASE
      WHEN x.done_at IS NULL THEN x.events_deleted + excluded.events_deleted
      WHEN excluded.events_deleted + excluded.tasks_deleted > 0 THEN excluded.events_deleted
      ELSE x.events_deleted END,
    tasks_deleted = CASE
      WHEN x.done_at IS NULL THEN x.tasks_deleted + excluded.tasks_deleted
      WHEN excluded.events_deleted + excluded.tasks_deleted > 0 THEN excluded.tasks_deleted
      ELSE x.tasks_deleted END,
    done_at = CASE WHEN x.done_at IS NOT NULL AND excluded.events_deleted + excluded.tasks_deleted = 0 THEN x.done_at END
  RETURNING 1
)
SELECT events, tasks FROM counts`,
    [tenantId, oid, batch],
  );
  const { events: e = 0, tasks: t = 0 } = rows[0] ?? {};
  return { done: e < batch && t < batch, deleted: e + t, events: e, tasks: t };
}

/**
 * Ends an erasure: when none of the person's rows is left, marks their erasures row done and
 * writes ONE event row of type principal_erased under `eventId`, in the same statement. The row
 * keeps no content: owner_id is the oid (so an auditor finds it by the person), task, session,
 * agent and request are empty, the payload is only the counts and when the erasure started. Returns
 * that row (also when it was written by an earlier call under the same id), or undefined while rows
 * of the person remain (another erasePrincipalBatch first) or when no erasure of them was started.
 */
export async function recordErasureRow(ctx: ArchiveContext, tenantId: string, oid: string, eventId: string): Promise<ArchivedEvent | undefined> {
  const { events, tasks, erasures } = ctx.names;
  const columns = 'event_id, tenant_id, owner_id, session_id, task_id, request_id, agent_name, agent_version, type, at, seq, ord, payload';
  const rows = await ctx.query<EventRow>(
    'recordErasure',
    `WITH remaining AS (
  SELECT EXISTS (SELECT 1 FROM ${events} WHERE tenant_id = $1 AND owner_id = $2 AND type <> '${ERASURE_TYPE}')
      OR EXISTS (SELECT 1 FROM ${tasks} WHERE tenant_id = $1 AND owner_id = $2) AS rows_left
), finished AS (
  UPDATE ${erasures} SET done_at = clock_timestamp()
  WHERE tenant_id = $1 AND oid = $2 AND done_at IS NULL AND NOT (SELECT rows_left FROM remaining)
  RETURNING started_at, done_at, events_deleted, tasks_deleted
), written AS (
  INSERT INTO ${events} (${columns})
  SELECT $3, $1, $2, '', '', NULL, '', '', '${ERASURE_TYPE}', done_at, 0, 0,
    jsonb_build_object('eventsDeleted', events_deleted, 'tasksDeleted', tasks_deleted, 'startedAt', started_at)
  FROM finished
  ON CONFLICT (event_id) DO NOTHING
  RETURNING ${columns}, archived_at
)
SELECT ${EVENT_COLUMNS} FROM written
UNION ALL
SELECT ${EVENT_COLUMNS} FROM ${events} WHERE event_id = $3 AND tenant_id = $1 AND owner_id = $2 AND type = '${ERASURE_TYPE}' AND NOT (SELECT rows_left FROM remaining)`,
    [tenantId, oid, eventId],
  );
  return rows[0] ? eventOf(rows[0]) : undefined;
}

/** Erasures started and not recorded, oldest first (at most `limit`). */
export async function readPendingErasures(ctx: ArchiveContext, limit: number): Promise<PendingErasure[]> {
  const rows = await ctx.query<{ tenant_id: string; oid: string; started_at: Date; events_deleted: string; tasks_deleted: string }>(
    'pendingErasures',
    `SELECT tenant_id, oid, started_at, events_deleted, tasks_deleted FROM ${ctx.names.erasures} WHERE done_at IS NULL ORDER BY started_at LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    tenantId: r.tenant_id,
    oid: r.oid,
    startedAt: r.started_at.toISOString(),
    eventsDeleted: Number(r.events_deleted),
    tasksDeleted: Number(r.tasks_deleted),
  }));
}

export function checkBatch(batch: number): void {
  if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`A batch must be a positive integer (got ${batch})`);
}
