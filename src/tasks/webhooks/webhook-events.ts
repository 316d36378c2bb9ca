import { createHash } from 'node:crypto';
import type { WebhookEventType, WebhookTarget } from '../../agents/config/webhooks.schema';
import { RequestRecord, WebhookDelivery } from '../../state/state.entities';
import { requestWebhookDestination } from './webhook-url.policy';

/** One event a commit reports: what happened to which request (and pause). */
export interface WebhookEvent {
  type: WebhookEventType;
  request: RequestRecord;
  pauseId?: string;
}

/**
 * The events of one request's change in a commit, from the record as it was read (`before`;
 * undefined for a request the commit creates) to the record written: an end (`request.completed`,
 * `request.failed`, `request.canceled`, and `approval.expired` beside the cancel of an expired pause)
 * or a new pause (`approval.required`). A record written again unchanged in status reports nothing,
 * so a commit that rewrites an ended request (a takeover, a retried write) reports it only once.
 */
export function eventsOf(before: Pick<RequestRecord, 'status' | 'pendingApprovals'> | undefined, after: RequestRecord): WebhookEvent[] {
  const events: WebhookEvent[] = [];
  const was = before?.status;
  if (after.status === 'Paused') {
    const pauseId = after.pendingApprovals?.pauseId;
    if (pauseId && (was !== 'Paused' || before?.pendingApprovals?.pauseId !== pauseId)) events.push({ type: 'approval.required', request: after, pauseId });
    return events;
  }
  if (was === after.status) return events;
  if (after.status === 'Completed') events.push({ type: 'request.completed', request: after });
  if (after.status === 'Failed') events.push({ type: 'request.failed', request: after });
  if (after.status === 'Canceled') {
    if (after.reason === 'expired') {
      const pauseId = before?.pendingApprovals?.pauseId ?? after.pauses?.at(-1)?.pauseId;
      events.push({ type: 'approval.expired', request: after, ...(pauseId ? { pauseId } : {}) });
    }
    events.push({ type: 'request.canceled', request: after });
  }
  return events;
}

/** Where a request's events go: every agent webhook with a `url`, and the request's own `webhook_url`. */
export interface Destination {
  url: string;
  events: readonly WebhookEventType[];
  secretEnv: string;
}

export function destinationsOf(targets: readonly WebhookTarget[], request: Pick<RequestRecord, 'webhookUrl'>): Destination[] {
  const out: Destination[] = targets.filter((t) => t.url !== undefined).map((t) => ({ url: t.url!, events: t.events, secretEnv: t.secret.env }));
  if (request.webhookUrl !== undefined) {
    // Checked when the request came; checked again, in case the config changed since (a reload).
    try {
      const own = requestWebhookDestination(targets, request.webhookUrl);
      out.push({ url: own.url, events: own.events, secretEnv: own.secret.env });
    } catch {
      // No longer allowed: nothing is sent there.
    }
  }
  return out;
}

/**
 * The deliveries of `events` to `destinations`, each due at `dueAt` (the committing replica sends
 * them at once; `dueAt` is when another replica may take them over). The id is the same for the
 * same event and destination however often it is planned (a commit retried after a lost
 * compare-and-set plans it again), and names its task, so an admin can redeliver by id alone.
 */
export function deliveriesOf(taskId: string, events: WebhookEvent[], destinations: Destination[], now: number, dueAt: number): WebhookDelivery[] {
  const out: WebhookDelivery[] = [];
  for (const e of events) {
    for (const d of destinations) {
      if (!d.events.includes(e.type)) continue;
      out.push({
        id: deliveryId(e.request.tenantId, taskId, e.request.requestId, e.type, e.pauseId, d.url),
        event: e.type,
        requestId: e.request.requestId,
        ...(e.pauseId ? { pauseId: e.pauseId } : {}),
        url: d.url,
        secretEnv: d.secretEnv,
        createdAt: now,
        attempts: 0,
        dueAt,
      });
    }
  }
  return out;
}

/** `msg_{base64url of the task id}.{digest}`: Standard Webhooks ids start `msg_`; the task id lets a redelivery find it. */
export function deliveryId(tenantId: string, taskId: string, requestId: string, type: string, pauseId: string | undefined, url: string): string {
  const hash = createHash('sha256');
  for (const part of [tenantId, taskId, requestId, type, pauseId ?? '', url]) hash.update(`${Buffer.byteLength(part)}:${part}`);
  return `msg_${Buffer.from(taskId).toString('base64url')}.${hash.digest('base64url').slice(0, 22)}`;
}

/** The task id a delivery id names, or undefined when it is no id of ours. */
export function taskOfDelivery(id: string): string | undefined {
  const m = /^msg_([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]{22}$/.exec(id);
  return m ? Buffer.from(m[1]!, 'base64url').toString() : undefined;
}
