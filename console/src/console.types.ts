/** Shapes the console reads from the service, beyond those api.ts and conversation.ts own. */

export interface SessionRow {
  session_id: string;
  task_count: number;
  last_activity_at: string;
  title: string | null;
}

export interface TaskRow {
  task_id: string;
  status: string;
  request_count: number;
  updated_at: string;
}

/**
 * A task as `GET /tasks/{task_id}` tells it (docs/api.md, Payloads; src/tasks/views/task-view.ts):
 * the fields the console reads. Written out here, not imported: the server's types pull in its own.
 */
export interface TaskView {
  task_id: string;
  session_id: string;
  status: string;
  running_request_id: string | null;
  requests: RequestView[];
  pending_approvals: PendingApprovalView[];
}

export interface RequestView {
  request_id: string;
  seq: number;
  status: string;
  messages: MessageView[];
  reason: string | null;
  error: { code: string; message: string } | null;
  /** Only on a request whose task has webhook deliveries for it (src/tasks/views/delivery-view.ts). */
  webhooks?: WebhookView[];
}

/** One webhook delivery of a request: an event to one receiver (docs/api.md, the task view). */
export interface WebhookView {
  id: string;
  event: string;
  pause_id: string | null;
  url: string;
  status: 'pending' | 'failed' | 'delivered';
  attempts: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

/** A stored message (src/state/state.entities.ts, StoredMessage). */
export type MessageView =
  | { id: string; role: 'user'; items: { content_type: 'text' | 'image'; content: string }[] }
  | { id: string; role: 'assistant'; content: string | null; tool_calls?: { id: string; name: string; arguments: string }[] }
  | { id: string; role: 'tool'; tool_call_id: string; content: string; is_error?: boolean };

/** A pause waiting for decisions: a task's `pending_approvals` entry, or a stream's paused outcome. */
export interface PendingApprovalView {
  request_id: string;
  pause_id: string;
  plan?: boolean;
  expires_at?: string | null;
  /** A `HitlResponse` call (`id`); an `approval-required` event's call may name it `tool_call_id`. */
  tool_calls?: { id?: string; tool_call_id?: string; name: string; arguments?: string; risk?: string | null; approval_reason?: string | null }[];
}

export interface ServiceIndex {
  agents?: { path: string; routes?: { method: string; path: string }[] }[];
}

/** One approve/reject choice while a request is paused; null until the user picks. */
export interface Decision {
  approved: boolean | null;
  reason: string;
}

export const RUNNING = new Set(['Running', 'Queued']);

/** One event of a task's timeline (`GET /{name}/{version}/tasks/{task_id}/events`, docs/archive.md). */
export interface TimelineEvent {
  event_id: string;
  type: string;
  at: string;
  request_id: string | null;
  seq: number;
  payload: Record<string, any>;
  archived_at: string | null;
}

/** One plan of a task (`GET /{name}/{version}/tasks/{task_id}/plans`): a pause and what became of it. */
export interface PlanRow {
  plan_id: string;
  request_id: string;
  status: string;
  plan: boolean;
  steps: { tool_call_id: string; name: string; risk?: string }[];
  max_risk: string | null;
  proposed_at: string;
  approved_at: string | null;
  executed_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  decided_by: string | null;
  reason: string | null;
}
