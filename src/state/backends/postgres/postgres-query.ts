import { Page } from '../../state-store';
import { RequestRecord, TaskRecord } from '../../state.entities';
import { parseRecord } from '../parse-record.util';
import { PostgresContext } from './postgres-context';
import { decodePosition, encodePosition } from './postgres-keys';

// The reads and pages of the PostgreSQL store, each one statement; the schema is in postgres-keys.ts.
// Liveness is judged in the statement, by the database's clock: a header is live when it has not
// expired and (unless the deletion asks) is not marked for deletion.

/** The SQL condition "the header aliased `h` is live" (`$deleting`: a boolean parameter that also admits marked headers). */
function live(ctx: PostgresContext, deleting = 'false'): string {
  return `(h.expires_at IS NULL OR h.expires_at > ${ctx.names.fn('now_ms')}()) AND (${deleting} OR NOT h.deleting)`;
}

/** The task header; undefined when missing or expired, or marked for deletion (unless `deleting`). */
export async function readTask(ctx: PostgresContext, tenantId: string, taskId: string, deleting = false): Promise<TaskRecord | undefined> {
  const { names } = ctx;
  const rows = await ctx.query<{ data: string }>(
    names.row('tasks', tenantId, taskId),
    `SELECT h.data FROM ${names.tasks} h WHERE h.tenant_id = $1 AND h.task_id = $2 AND ${live(ctx, '$3')}`,
    [tenantId, taskId, deleting],
  );
  return rows.length ? parseRecord<TaskRecord>(names.row('tasks', tenantId, taskId), rows[0].data) : undefined;
}

export async function readRequests(ctx: PostgresContext, tenantId: string, taskId: string): Promise<RequestRecord[]> {
  const { names } = ctx;
  const rows = await ctx.query<{ seq: number; data: string }>(
    names.row('tasks', tenantId, taskId),
    `SELECT r.seq, r.data FROM ${names.tasks} h JOIN ${names.requests} r ON r.tenant_id = h.tenant_id AND r.task_id = h.task_id
      WHERE h.tenant_id = $1 AND h.task_id = $2 AND ${live(ctx)} ORDER BY r.seq`,
    [tenantId, taskId],
  );
  return rows.map((r) => parseRecord<RequestRecord>(names.row('requests', tenantId, taskId, r.seq), r.data));
}

export async function readRequest(ctx: PostgresContext, tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
  const { names } = ctx;
  const rows = await ctx.query<{ task_id: string; seq: number; data: string }>(
    `${names.requests} (${JSON.stringify(tenantId)}, request ${JSON.stringify(requestId)})`,
    `SELECT r.task_id, r.seq, r.data FROM ${names.requests} r JOIN ${names.tasks} h ON h.tenant_id = r.tenant_id AND h.task_id = r.task_id
      WHERE r.tenant_id = $1 AND r.request_id = $2 AND ${live(ctx)} LIMIT 1`,
    [tenantId, requestId],
  );
  if (!rows.length) return undefined;
  const { task_id, seq, data } = rows[0];
  return parseRecord<RequestRecord>(names.row('requests', tenantId, task_id, seq), data);
}

/** An owner's tasks of one session, oldest first: keyset pages on the creation order (`position`). */
export async function readSessionTasks(
  ctx: PostgresContext,
  tenantId: string,
  ownerId: string,
  sessionId: string,
  page: { limit: number; cursor?: string; includeDeleting?: boolean },
): Promise<Page<TaskRecord>> {
  const { names } = ctx;
  const limit = Math.max(1, Math.floor(page.limit));
  // A position this store did not issue starts from the beginning (as on Redis); one past any
  // bigint lies after every task.
  const decoded = page.cursor ? decodePosition(page.cursor, 1)?.[0] : undefined;
  const after = decoded !== undefined && /^\d+$/.test(decoded) ? decoded : '0';
  if (after.length > 18) return { items: [] };
  const rows = await ctx.query<{ task_id: string; position: string; data: string }>(
    `${names.tasks} session (${JSON.stringify(tenantId)}, ${JSON.stringify(ownerId)}, ${JSON.stringify(sessionId)})`,
    `SELECT h.task_id, h.position, h.data FROM ${names.tasks} h
      WHERE h.tenant_id = $1 AND h.owner_id = $2 AND h.session_id = $3 AND h.position > $4 AND ${live(ctx, '$5')}
      ORDER BY h.position LIMIT $6`,
    [tenantId, ownerId, sessionId, after, page.includeDeleting === true, limit + 1],
  );
  const items = rows.slice(0, limit).map((r) => parseRecord<TaskRecord>(names.row('tasks', tenantId, r.task_id), r.data));
  return rows.length > limit ? { items, nextCursor: encodePosition(rows[limit - 1].position) } : { items };
}

/**
 * The sessions an owner has tasks in, in session id order: the distinct session ids of the owner's
 * task rows, read as a loose index scan (one index probe per session, never the tasks of a
 * session one by one). Sessions whose tasks have all expired but not been swept yet are still
 * listed, as the contract allows.
 */
export async function readOwnerSessions(
  ctx: PostgresContext,
  tenantId: string,
  ownerId: string,
  page: { limit: number; cursor?: string },
): Promise<Page<string>> {
  const { names } = ctx;
  const limit = Math.max(1, Math.floor(page.limit));
  const after = page.cursor ? decodePosition(page.cursor, 1)?.[0] : undefined;
  const next = (bound: string) =>
    `SELECT t.session_id FROM ${names.tasks} t WHERE t.tenant_id = $1 AND t.owner_id = $2 AND ${bound} ORDER BY t.session_id LIMIT 1`;
  const rows = await ctx.query<{ session_id: string }>(
    `${names.tasks} sessions (${JSON.stringify(tenantId)}, ${JSON.stringify(ownerId)})`,
    `WITH RECURSIVE s(session_id, n) AS (
        (SELECT x.session_id, 1 FROM (${next('($3::text IS NULL OR t.session_id > $3)')}) x)
        UNION ALL
        SELECT (${next('t.session_id > s.session_id')}), s.n + 1 FROM s WHERE s.session_id IS NOT NULL AND s.n <= $4
      )
      SELECT session_id FROM s WHERE session_id IS NOT NULL LIMIT $4`,
    [tenantId, ownerId, after ?? null, limit + 1],
  );
  const items = rows.slice(0, limit).map((r) => r.session_id);
  return rows.length > limit ? { items, nextCursor: encodePosition(items[limit - 1]) } : { items };
}
