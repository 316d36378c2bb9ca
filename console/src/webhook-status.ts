/**
 * What the approvals panel says of a pause's webhooks (docs/console.md): the `approval.required`
 * deliveries of the paused request for this pause, as the task view lists them (docs/api.md), one
 * line each. An agent without webhooks has none, and the panel says nothing.
 */
import type { WebhookView } from './console.types';
import type { Pending } from './conversation';

export interface WebhookLine {
  text: string;
  /** The whole of what went wrong, and when it is tried next: the line's tooltip. */
  title?: string;
}

/** The lines of one pause; `webhooks` are its request's, read with the task. */
export function approvalWebhooks(webhooks: WebhookView[] | undefined, pending: Pending): WebhookView[] {
  // A request that paused again after a decision has a delivery per pause: only this one's count.
  return (webhooks ?? []).filter((w) => w.event === 'approval.required' && (w.pause_id === null || w.pause_id === pending.pauseId));
}

const CLIP = 60;

/** The last attempt's outcome: the receiver's status, or why there was none (a refused address, a timeout). */
function last(w: WebhookView): string | undefined {
  if (w.last_status !== null) return String(w.last_status);
  if (!w.last_error) return undefined;
  return w.last_error.length > CLIP ? `${w.last_error.slice(0, CLIP - 1)}…` : w.last_error;
}

function statusOf(w: WebhookView): string {
  const was = last(w);
  if (w.status === 'delivered') return was ? `delivered (${was})` : 'delivered';
  // Dead without an attempt: given up while too many of the task's deliveries waited (the error says so).
  if (w.status === 'failed') return was ? `failed (${w.attempts ? `attempt ${w.attempts}, ` : ''}last ${was})` : 'failed';
  // Waiting: before its first attempt (or in it), nothing failed yet.
  return w.attempts === 0 ? 'sending' : `retrying (attempt ${w.attempts}${was ? `, last ${was}` : ''})`;
}

export function webhookLines(deliveries: WebhookView[]): WebhookLine[] {
  // Several receivers: each line names its own (the host is enough to tell them apart).
  const many = deliveries.length > 1;
  return deliveries.map((w) => {
    const to = many ? ` to ${hostOf(w.url)}` : '';
    const next = w.status === 'pending' && w.next_attempt_at ? `next attempt ${w.next_attempt_at}` : undefined;
    const title = [w.last_error, next].filter(Boolean).join('; ') || undefined;
    return { text: `Webhook${to}: ${statusOf(w)}`, title };
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** The first re-read of a waiting delivery, and the longest wait between two (ms). */
export const RECHECK_FIRST_MS = 1000;
export const RECHECK_MAX_MS = 30_000;

/**
 * When to read the task again for a newer status: never once every delivery settled; otherwise
 * after a wait that doubles with each read (`reads` so far), from 1 s up to 30 s, but not much
 * past the soonest next attempt, whose outcome is what the reader waits for.
 */
export function recheckIn(deliveries: WebhookView[], reads: number, now: number): number | undefined {
  const waiting = deliveries.filter((w) => w.status === 'pending');
  if (!waiting.length) return undefined;
  const backoff = Math.min(RECHECK_MAX_MS, RECHECK_FIRST_MS * 2 ** reads);
  const soonest = Math.min(...waiting.map((w) => (w.next_attempt_at ? Date.parse(w.next_attempt_at) : Infinity)));
  return Math.max(RECHECK_FIRST_MS, Math.min(backoff, soonest - now + 500));
}
