import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { TaskRecord, WebhookDelivery } from '../../state/state.entities';
import { Transition } from './transition';

/** Deliveries a task keeps delivered (for its view: the console shows them), the newest. */
export const KEPT_DELIVERED = 10;
/** Dead deliveries a task keeps (for GET /admin/webhooks/deliveries and redelivery), the newest. */
export const KEPT_DEAD = 20;
/** Deliveries waiting per task at most: past it the oldest waiting one is given up (dead), so a header stays small. */
export const MAX_WAITING = 50;

/** What an attempt came to (src/tasks/webhooks/webhook-delivery.client.ts), as the outbox records it. */
export interface AttemptOutcome {
  ok: boolean;
  status?: number;
  error?: string;
  /** The next attempt's time; undefined: the delivery is dead (its retry window is over). */
  retryAt?: number;
}

/**
 * The outbox after `added` deliveries joined it (src/tasks/webhooks/webhook-outbox.service.ts): new
 * ids appended (an id already there is the same event planned again: kept as it is), then trimmed
 * to the bounds above, oldest first.
 */
export function withDeliveries(outbox: readonly WebhookDelivery[] | undefined, added: readonly WebhookDelivery[]): WebhookDelivery[] {
  const ids = new Set((outbox ?? []).map((d) => d.id));
  // Also once within `added`: two receivers at one URL plan one delivery id (settled by id, a second copy would never be).
  const fresh = added.filter((d) => !ids.has(d.id) && (ids.add(d.id), true));
  return trimmed([...(outbox ?? []), ...fresh]);
}

/**
 * Claims the due deliveries among `ids` (all due ones when `ids` is undefined) for one attempt by
 * this replica: their `dueAt` moves to the end of the claim, so no other replica takes them
 * meanwhile, and one that dies mid-attempt leaves them due again then. Header only, no request read.
 */
export function claimDeliveries(ids: readonly string[] | undefined, claimMs: number): Transition<WebhookDelivery[]> {
  return {
    reads: () => [],
    apply({ task }, now) {
      const claimed: WebhookDelivery[] = [];
      const outbox = (task.outbox ?? []).map((d) => {
        if (!isWaiting(d) || d.dueAt > now || (ids && !ids.includes(d.id))) return d;
        const next = { ...d, dueAt: now + claimMs };
        claimed.push(next);
        return next;
      });
      if (!claimed.length) return { unchanged: [] };
      return { task: { ...task, outbox }, requests: [], result: claimed };
    },
  };
}

/**
 * Records an attempt: delivered (kept as delivered, no longer due), failed (due again at
 * `retryAt`), or dead (no `retryAt`). A delivery no longer in the outbox (the task was deleted and
 * created again, or an admin's redelivery replaced it) is left alone.
 */
export function settleDelivery(id: string, outcome: AttemptOutcome): Transition<WebhookDelivery | undefined> {
  return {
    reads: () => [],
    apply({ task }, now) {
      const at = (task.outbox ?? []).findIndex((d) => d.id === id);
      const current = task.outbox?.[at];
      if (!current || !isWaiting(current)) return { unchanged: undefined };
      const attempt = { attempts: current.attempts + 1, lastAttemptAt: now, ...(outcome.status !== undefined ? { lastStatus: outcome.status } : {}) };
      const next: WebhookDelivery = outcome.ok
        ? { ...withoutError(current), ...attempt, deliveredAt: now }
        : {
            ...current,
            ...attempt,
            lastError: outcome.error ?? `answered ${outcome.status}`,
            ...(outcome.retryAt === undefined ? { dead: true } : { dueAt: outcome.retryAt }),
          };
      // No answer this time (a connection error): the status of an earlier attempt would mislead.
      if (outcome.status === undefined) delete next.lastStatus;
      const outbox = task.outbox!.slice();
      outbox[at] = next;
      return { task: { ...task, outbox: trimmed(outbox) }, requests: [], result: next };
    },
  };
}

/** An admin's redelivery (`POST /admin/webhooks/deliveries/{id}/redeliver`): due now, with a fresh retry window (`retryFrom`). */
export function redeliver(id: string): Transition<WebhookDelivery> {
  return {
    reads: () => [],
    apply({ task }, now) {
      const at = (task.outbox ?? []).findIndex((d) => d.id === id);
      const current = task.outbox?.[at];
      if (!current) throw new DomainError(ErrorCode.DELIVERY_NOT_FOUND, `No webhook delivery ${id}`);
      const next: WebhookDelivery = { ...current, attempts: 0, retryFrom: now, dueAt: now };
      delete next.dead;
      delete next.deliveredAt;
      const outbox = task.outbox!.slice();
      outbox[at] = next;
      return { task: { ...task, outbox }, requests: [], result: next };
    },
  };
}

/** Waiting: neither delivered nor dead. */
export function isWaiting(d: WebhookDelivery): boolean {
  return d.deliveredAt === undefined && !d.dead;
}

/** The deliveries of `task` due by `now` (the sweep takes them: src/tasks/run/lease-sweeper.service.ts). */
export function dueDeliveries(task: Pick<TaskRecord, 'outbox'>, now: number): WebhookDelivery[] {
  return (task.outbox ?? []).filter((d) => isWaiting(d) && d.dueAt <= now);
}

function withoutError(d: WebhookDelivery): WebhookDelivery {
  const next = { ...d };
  delete next.lastError;
  return next;
}

/** At most KEPT_DELIVERED delivered, KEPT_DEAD dead and MAX_WAITING waiting, the oldest going first (a waiting one given up as dead). */
function trimmed(outbox: WebhookDelivery[]): WebhookDelivery[] {
  let waiting = outbox.filter(isWaiting).length;
  const given: WebhookDelivery[] = outbox.map((d) => {
    if (waiting <= MAX_WAITING || !isWaiting(d)) return d;
    waiting--;
    return { ...d, dead: true, lastError: `given up: more than ${MAX_WAITING} deliveries of the task were waiting` };
  });
  const keep = (pick: (d: WebhookDelivery) => boolean, most: number) => new Set(given.filter(pick).slice(-most));
  const delivered = keep((d) => d.deliveredAt !== undefined, KEPT_DELIVERED);
  const dead = keep((d) => !!d.dead && d.deliveredAt === undefined, KEPT_DEAD);
  return given.filter((d) => isWaiting(d) || delivered.has(d) || dead.has(d));
}
