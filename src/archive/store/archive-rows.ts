import { ArchiveEvent, ArchiveEventType } from '../archive-event';

/** An event as the archive reads it back: with the time its task left the live store, when it has. */
export type ArchivedEvent = ArchiveEvent & {
  /** ISO 8601: when the task was deleted from the live store (markDeleted); absent while it lives. */
  archivedAt?: string;
};

/** The columns every read of events selects; `at_key` is `at` to the microsecond, for cursors. */
export const EVENT_COLUMNS = `event_id, tenant_id, owner_id, session_id, task_id, request_id, agent_name, agent_version, type, at, seq, ord, payload, archived_at,
  to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at_key`;

export interface EventRow {
  event_id: string;
  tenant_id: string;
  owner_id: string;
  session_id: string;
  task_id: string;
  request_id: string | null;
  agent_name: string;
  agent_version: string;
  type: string;
  at: Date;
  seq: number;
  ord: number;
  payload: Record<string, unknown>;
  archived_at: Date | null;
  at_key: string;
}

export function eventOf(row: EventRow): ArchivedEvent {
  const event: ArchivedEvent = {
    eventId: row.event_id,
    tenantId: row.tenant_id,
    ownerId: row.owner_id,
    sessionId: row.session_id,
    taskId: row.task_id,
    agentName: row.agent_name,
    agentVersion: row.agent_version,
    type: row.type as ArchiveEventType,
    at: row.at.toISOString(),
    seq: row.seq,
    ord: row.ord,
    payload: row.payload,
  };
  if (row.request_id !== null) event.requestId = row.request_id;
  if (row.archived_at !== null) event.archivedAt = row.archived_at.toISOString();
  return event;
}

/**
 * `value` as JSON PostgreSQL's jsonb accepts: jsonb refuses U+0000 and lone surrogates (which a
 * tool's result may hold, and which would fail the whole batch), so they become U+FFFD, in strings
 * and in keys alike.
 */
export function jsonbText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'string') return safe(v);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const keys = Object.keys(v);
    if (!keys.some((k) => safe(k) !== k)) return v;
    return Object.fromEntries(keys.map((k) => [safe(k), (v as Record<string, unknown>)[k]]));
  });
}

/** ES2024's String.prototype.toWellFormed (Node 20+), which the project's TypeScript lib does not declare yet. */
type Es2024String = string & { toWellFormed(): string };

function safe(text: string): string {
  const wellFormed = (text as Es2024String).toWellFormed();
  return wellFormed.includes('\0') ? wellFormed.replaceAll('\0', '\uFFFD') : wellFormed;
}
