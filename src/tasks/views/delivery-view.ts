import { TaskRecord, WebhookDelivery } from '../../state/state.entities';

/** `delivered` (a 2xx), `failed` (dead: its last attempt failed), `pending` (waiting, or an attempt under way). */
export type DeliveryStatus = 'pending' | 'failed' | 'delivered';

/**
 * One webhook delivery as a request's `webhooks` in `GET /tasks/{task_id}` shows it
 * (docs/api.md, the task view). The admin routes add the ids and the secret's variable
 * (AdminDeliveryView), so the two never tell a delivery's state differently.
 */
export interface DeliveryView {
  id: string;
  event: string;
  /** The pause an approval event is about (null for the others): a request may pause more than once. */
  pause_id: string | null;
  url: string;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

/** A delivery as the admin routes show it (never its secret: only the variable's name). */
export interface AdminDeliveryView extends DeliveryView {
  task_id: string;
  session_id: string;
  request_id: string;
  created_at: string;
  secret_env: string;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function deliveryStatus(d: WebhookDelivery): DeliveryStatus {
  return d.deliveredAt !== undefined ? 'delivered' : d.dead ? 'failed' : 'pending';
}

export function deliveryView(d: WebhookDelivery): DeliveryView {
  const status = deliveryStatus(d);
  return {
    id: d.id,
    event: d.event,
    pause_id: d.pauseId ?? null,
    url: d.url,
    status,
    attempts: d.attempts,
    last_attempt_at: iso(d.lastAttemptAt),
    last_status: d.lastStatus ?? null,
    last_error: d.lastError ?? null,
    // Only a waiting delivery has a next attempt (while one is under way: the end of its claim).
    next_attempt_at: status === 'pending' ? iso(d.dueAt) : null,
  };
}

export function adminDeliveryView(task: Pick<TaskRecord, 'taskId' | 'sessionId'>, d: WebhookDelivery): AdminDeliveryView {
  return {
    ...deliveryView(d),
    task_id: task.taskId,
    session_id: task.sessionId,
    request_id: d.requestId,
    created_at: new Date(d.createdAt).toISOString(),
    secret_env: d.secretEnv,
  };
}

/**
 * The `webhooks` of each request of `outbox` that has a delivery there, in outbox (event) order.
 * A request without one gets no `webhooks` key at all, so the task view of an agent without
 * webhooks stays exactly what it was (upstream clients compare shapes).
 */
export function deliveriesByRequest(outbox: readonly WebhookDelivery[] | undefined): Map<string, DeliveryView[]> {
  const byRequest = new Map<string, DeliveryView[]>();
  for (const d of outbox ?? []) {
    const views = byRequest.get(d.requestId) ?? [];
    views.push(deliveryView(d));
    byRequest.set(d.requestId, views);
  }
  return byRequest;
}
