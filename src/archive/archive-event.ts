/**
 * One row of the audit archive (issue 23, docs/design/audit-archive.md): an append-only event of a
 * stateful task, derived from what the live store holds (src/archive/archive-events.ts), so the
 * same request derived twice, on any replica, yields the same rows under the same ids.
 */
export const ARCHIVE_EVENT_TYPES = [
  'request_accepted',
  'model_call',
  'plan_proposed',
  'decision',
  'plan_refined',
  'approval_expired',
  'tool_call_started',
  'tool_call_completed',
  'tool_call_failed',
  'request_completed',
  'request_failed',
  'request_canceled',
  'edit',
  'fork',
  'task_deleted',
  'session_deleted',
  'principal_erased',
] as const;

export type ArchiveEventType = (typeof ARCHIVE_EVENT_TYPES)[number];

export interface ArchiveEvent {
  /** Deterministic: `{tenant}/{task}/{seq}/{type}/{n}` (`n`: a tool call id, a pause id, or 0). */
  eventId: string;
  tenantId: string;
  ownerId: string;
  sessionId: string;
  /** '' on a session- or principal-level event (session_deleted, principal_erased). */
  taskId: string;
  /** Absent on task- and session-level events (task_deleted, session_deleted, principal_erased). */
  requestId?: string;
  /** The agent's name and version (TaskRecord.agent is `"{name}:{version}"`). */
  agentName: string;
  agentVersion: string;
  type: ArchiveEventType;
  /** When it happened (ISO 8601), from the stored record. */
  at: string;
  /** The request's position in its task; a task-level event (task_deleted) takes the task's request count, so it sorts after every request. */
  seq: number;
  /** Position of the event within its request's derivation: a task's timeline is ordered by (seq, ord). */
  ord: number;
  /** JSON; large strings in it (arguments, results, messages) already cut at TA_ARCHIVE_MAX_PAYLOAD_BYTES and marked. */
  payload: Record<string, unknown>;
}
