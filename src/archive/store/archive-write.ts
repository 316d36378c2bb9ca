import { ArchiveEvent } from '../archive-event';
import { ArchiveContext } from './archive-context';
import { jsonbText } from './archive-rows';

/** What the catch-up records of a task once its events are stored (tasks.archived_version: the highest wins). */
export interface TaskNote {
  tenantId: string;
  taskId: string;
  ownerId: string;
  sessionId: string;
  /** `name:version`, as TaskRecord.agent. */
  agent: string;
  /** The task's version whose events were just stored. */
  version: number;
}

/**
 * Stores events and notes tasks in ONE statement (one round trip, one transaction): the events
 * through `jsonb_to_recordset` with ON CONFLICT (event_id) DO NOTHING, so an event already stored,
 * by this replica or another, concurrently or not, is stored once; the notes as an upsert keeping
 * the highest archived version. Rows are written in key order, so two replicas writing overlapping
 * batches wait for each other instead of deadlocking. An event of a task already marked deleted
 * takes the task's deleted_at as its archived_at. Times are kept to the millisecond, as JavaScript's,
 * so a cursor built from a row read back names that row exactly. Returns the events inserted now.
 */
export async function insertEventRows(ctx: ArchiveContext, events: readonly ArchiveEvent[], notes: readonly TaskNote[] = []): Promise<number> {
  if (events.length === 0 && notes.length === 0) return 0;
  const { events: ev, tasks } = ctx.names;
  for (const e of events) checkEvent(e);
  const rows = events.map((e) => ({
    event_id: e.eventId,
    tenant_id: e.tenantId,
    owner_id: e.ownerId,
    session_id: e.sessionId,
    task_id: e.taskId,
    request_id: e.requestId ?? null,
    agent_name: e.agentName,
    agent_version: e.agentVersion,
    type: e.type,
    at: e.at,
    seq: e.seq,
    ord: e.ord,
    payload: e.payload ?? {},
  }));
  const result = await ctx.query<{ inserted: number }>(
    'insertEvents',
    `WITH noted AS (
  INSERT INTO ${tasks} AS t (tenant_id, task_id, owner_id, session_id, agent, archived_version)
  SELECT n.tenant_id, n.task_id, n.owner_id, n.session_id, n.agent, n.version
  FROM jsonb_to_recordset($2::jsonb) AS n(tenant_id text, task_id text, owner_id text, session_id text, agent text, version integer)
  ORDER BY n.tenant_id, n.task_id
  ON CONFLICT (tenant_id, task_id) DO UPDATE SET archived_version = greatest(t.archived_version, excluded.archived_version)
  RETURNING 1
), inserted AS (
  INSERT INTO ${ev} (event_id, tenant_id, owner_id, session_id, task_id, request_id, agent_name, agent_version, type, at, seq, ord, payload, archived_at)
  SELECT r.event_id, r.tenant_id, r.owner_id, r.session_id, r.task_id, r.request_id, r.agent_name, r.agent_version, r.type, date_trunc('milliseconds', r.at), r.seq, r.ord, r.payload, d.deleted_at
  FROM jsonb_to_recordset($1::jsonb) AS r(event_id text, tenant_id text, owner_id text, session_id text, task_id text, request_id text,
    agent_name text, agent_version text, type text, at timestamptz, seq integer, ord integer, payload jsonb)
  LEFT JOIN ${tasks} d ON d.tenant_id = r.tenant_id AND d.task_id = r.task_id
  ORDER BY r.event_id
  ON CONFLICT (event_id) DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM inserted)::integer AS inserted, (SELECT count(*) FROM noted)::integer AS noted`,
    [jsonbText(rows), JSON.stringify(latestNotes(notes))],
  );
  return result[0]?.inserted ?? 0;
}

/** A row PostgreSQL would refuse fails the whole batch: refused here instead, naming the event (a bug of the deriver). */
function checkEvent(e: ArchiveEvent): void {
  const problem = !e.eventId
    ? 'no eventId'
    : Number.isNaN(Date.parse(e.at))
      ? `at ${JSON.stringify(e.at)} is not a time`
      : !Number.isInteger(e.seq) || !Number.isInteger(e.ord)
        ? 'seq and ord must be integers'
        : undefined;
  if (problem) throw new TypeError(`Archive event ${JSON.stringify(e.eventId)}: ${problem}`);
}

/** One note per task (the highest version): an upsert may not touch a row twice in one statement. */
function latestNotes(notes: readonly TaskNote[]): Record<string, unknown>[] {
  const byTask = new Map<string, TaskNote>();
  for (const n of notes) {
    const key = JSON.stringify([n.tenantId, n.taskId]);
    const seen = byTask.get(key);
    if (!seen || n.version > seen.version) byTask.set(key, n);
  }
  return [...byTask.values()].map((n) => ({
    tenant_id: n.tenantId,
    task_id: n.taskId,
    owner_id: n.ownerId,
    session_id: n.sessionId,
    agent: n.agent,
    version: n.version,
  }));
}

/**
 * The task left the live store at `at`: its tasks row gets deleted_at, its events archived_at (each
 * keeps the first time it was given; the rows stay). A task with events but no tasks row yet gets
 * one from its events (archived_version 0). One statement; it touches every event row of the task,
 * which the live store's limits keep to a task's requests. Returns the event rows marked now.
 */
export async function markTaskDeleted(ctx: ArchiveContext, tenantId: string, taskId: string, at: Date): Promise<number> {
  const { events, tasks } = ctx.names;
  const rows = await ctx.query<{ marked: number }>(
    'markDeleted',
    `WITH noted AS (
  UPDATE ${tasks} SET deleted_at = coalesce(deleted_at, $3) WHERE tenant_id = $1 AND task_id = $2 RETURNING 1
), first_note AS (
  INSERT INTO ${tasks} (tenant_id, task_id, owner_id, session_id, agent, archived_version, deleted_at)
  SELECT tenant_id, task_id, owner_id, session_id, agent_name || ':' || agent_version, 0, $3 FROM ${events}
  WHERE tenant_id = $1 AND task_id = $2 AND NOT EXISTS (SELECT 1 FROM ${tasks} WHERE tenant_id = $1 AND task_id = $2)
  LIMIT 1
  ON CONFLICT (tenant_id, task_id) DO NOTHING
  RETURNING 1
), marked AS (
  UPDATE ${events} SET archived_at = $3 WHERE tenant_id = $1 AND task_id = $2 AND archived_at IS NULL RETURNING 1
)
SELECT (SELECT count(*) FROM marked)::integer AS marked`,
    [tenantId, taskId, at],
  );
  return rows[0]?.marked ?? 0;
}
