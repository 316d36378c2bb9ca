import { decodePosition, encodePosition } from '../../state/backends/postgres/postgres-keys';
import { decodeTimelineCursor, encodeTimelineCursor, TimelineKey, timelineKey } from '../timeline';
import { ArchiveContext } from './archive-context';
import { ArchiveCursorError } from './archive-errors';
import { ArchivedEvent, EVENT_COLUMNS, EventRow, eventOf } from './archive-rows';

/** Which events listEvents reads: always one tenant's; the rest narrow it (all given ones must hold). */
export interface ArchiveFilter {
  tenantId: string;
  /** The owner of the task (the person whose task it is). */
  ownerId?: string;
  taskId?: string;
  sessionId?: string;
  type?: string;
  /** Inclusive. */
  since?: Date;
  /** Exclusive. */
  until?: Date;
}

export interface ArchivePageRequest {
  /** 1 to MAX_ARCHIVE_PAGE (larger is read as the maximum). */
  limit: number;
  cursor?: string;
}

/** A timeline's page: after a cursor timelines issued (src/archive/timeline.ts), or after a key (merging with events derived from the live store). */
export interface TimelinePageRequest {
  limit: number;
  cursor?: string;
  after?: TimelineKey;
}

export interface ArchivePage {
  items: ArchivedEvent[];
  /** Present when more may follow: pass it back as `cursor`. */
  nextCursor?: string;
}

/** The row the archive keeps of a task. */
export interface ArchivedTask {
  tenantId: string;
  taskId: string;
  ownerId: string;
  sessionId: string;
  /** `name:version`. */
  agent: string;
  archivedVersion: number;
  /** ISO 8601, when the task left the live store (markDeleted). */
  deletedAt?: string;
}

/** The largest page a read returns. */
export const MAX_ARCHIVE_PAGE = 1000;

const INT32 = /^-?\d{1,10}$/;
const TIME_KEY = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/**
 * Events of one tenant in time order, (at, seq, ord, event_id) — events of one millisecond in their
 * causal order within a request — one keyset page: the cursor is the last row's (at to the
 * microsecond, seq, ord, event_id), opaque (base64url), and refused (ArchiveCursorError) unless it
 * is one listEvents issued.
 */
export async function readEvents(ctx: ArchiveContext, filter: ArchiveFilter, page: ArchivePageRequest): Promise<ArchivePage> {
  const limit = pageLimit(page.limit);
  const values: unknown[] = [filter.tenantId];
  const where = ['tenant_id = $1'];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    where.push(sql.replace('?', `$${values.length}`));
  };
  if (filter.ownerId !== undefined) add('owner_id = ?', filter.ownerId);
  if (filter.taskId !== undefined) add('task_id = ?', filter.taskId);
  if (filter.sessionId !== undefined) add('session_id = ?', filter.sessionId);
  if (filter.type !== undefined) add('type = ?', filter.type);
  if (filter.since !== undefined) add('at >= ?', filter.since.toISOString());
  if (filter.until !== undefined) add('at < ?', filter.until.toISOString());
  if (page.cursor !== undefined) {
    const [at, seq, ord, eventId] = eventsPosition(page.cursor);
    values.push(at, seq, ord, eventId);
    const n = values.length;
    where.push(`(at, seq, ord, event_id) > ($${n - 3}::timestamptz, $${n - 2}::int, $${n - 1}::int, $${n})`);
  }
  values.push(limit + 1);
  const rows = await ctx.query<EventRow>(
    'listEvents',
    `SELECT ${EVENT_COLUMNS} FROM ${ctx.names.events} WHERE ${where.join(' AND ')} ORDER BY at, seq, ord, event_id LIMIT $${values.length}`,
    values,
  );
  return pageOf(rows, limit, (last) => encodePosition('e', last.at_key, last.seq, last.ord, last.event_id));
}

/**
 * One task's events in timeline order (src/archive/timeline.ts: seq, ord, event_id), one
 * keyset page, also after the task's deletion. The cursor is the timeline's (encodeTimelineCursor),
 * so a page of the archive and one derived from the live records continue each other.
 */
export async function readTimeline(ctx: ArchiveContext, tenantId: string, taskId: string, page: TimelinePageRequest): Promise<ArchivePage> {
  const limit = pageLimit(page.limit);
  const values: unknown[] = [tenantId, taskId];
  let after = '';
  const key = page.after ?? (page.cursor !== undefined ? decodeTimelineCursor(page.cursor) : undefined);
  if (key) {
    const [seq, ord, eventId] = key;
    values.push(seq, ord, eventId);
    after = ' AND (seq, ord, event_id) > ($3::integer, $4::integer, $5)';
  }
  values.push(limit + 1);
  const rows = await ctx.query<EventRow>(
    'taskTimeline',
    `SELECT ${EVENT_COLUMNS} FROM ${ctx.names.events} WHERE tenant_id = $1 AND task_id = $2${after} ORDER BY seq, ord, event_id LIMIT $${values.length}`,
    values,
  );
  return pageOf(rows, limit, (last) => encodeTimelineCursor(timelineKey(eventOf(last))));
}

export async function readTaskInfo(ctx: ArchiveContext, tenantId: string, taskId: string): Promise<ArchivedTask | undefined> {
  const rows = await ctx.query<{ owner_id: string; session_id: string; agent: string; archived_version: number; deleted_at: Date | null }>(
    'taskInfo',
    `SELECT owner_id, session_id, agent, archived_version, deleted_at FROM ${ctx.names.tasks} WHERE tenant_id = $1 AND task_id = $2`,
    [tenantId, taskId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const task: ArchivedTask = { tenantId, taskId, ownerId: row.owner_id, sessionId: row.session_id, agent: row.agent, archivedVersion: row.archived_version };
  if (row.deleted_at) task.deletedAt = row.deleted_at.toISOString();
  return task;
}

function pageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`A page's limit must be a positive integer (got ${limit})`);
  return Math.min(limit, MAX_ARCHIVE_PAGE);
}

function pageOf(rows: EventRow[], limit: number, cursorOf: (last: EventRow) => string): ArchivePage {
  const items = rows.slice(0, limit).map(eventOf);
  return rows.length > limit ? { items, nextCursor: cursorOf(rows[limit - 1]!) } : { items };
}

function positionOf(cursor: string, count: number, tag: string): string[] {
  // base64url of printable ASCII, and not longer than an event id allows.
  if (cursor.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new ArchiveCursorError();
  const parts = decodePosition(cursor, count);
  if (!parts || parts[0] !== tag) throw new ArchiveCursorError();
  return parts.slice(1);
}

function eventsPosition(cursor: string): [string, number, number, string] {
  const [at, seq, ord, eventId] = positionOf(cursor, 5, 'e') as [string, string, string, string];
  if (!TIME_KEY.test(at) || Number.isNaN(Date.parse(at)) || !INT32.test(seq) || !INT32.test(ord)) throw new ArchiveCursorError();
  return [at, Number(seq), Number(ord), eventId];
}
