import { MAX_RETRY_AFTER_MS } from './retry-after.util';

export interface WebhookRetryOptions {
  /** TA_WEBHOOK_RETRY_HOURS: no attempt is made later than this long after the event. */
  retryHours: number;
  /** The first retry's ceiling; it doubles with every failed attempt. */
  baseMs?: number;
  /** The ceiling stops doubling here. */
  capMs?: number;
  /** No retry comes sooner than this, whatever the jitter drew. */
  minMs?: number;
  /** A receiver's `Retry-After` is honoured up to this. */
  maxRetryAfterMs?: number;
  /** [0, 1), for the specs. */
  random?: () => number;
}

export interface FailedAttempt {
  /** Attempts made so far, this failed one included (1 after the first). */
  attempt: number;
  /** When the event was recorded (epoch ms): the retry window counts from here. */
  createdAt: number;
  /** When this attempt failed (epoch ms). */
  now: number;
  /** The receiver's `Retry-After`, already parsed (retry-after.util.ts). */
  retryAfterMs?: number;
}

/**
 * When to try a failed delivery again, or undefined once it is dead. Exponential backoff with full
 * jitter (AWS's "Exponential Backoff and Jitter"): a delay drawn uniformly below a ceiling of
 * 5 s, 10 s, 20 s, ... capped at 1 h, so that the deliveries of a receiver that was down come back
 * spread out instead of in waves; at least 1 s. A `Retry-After` later than the draw wins, up to
 * 1 h. Dead when that time falls after `createdAt` + `retryHours`: with the defaults a receiver
 * down for a day gets about 55 attempts per event.
 */
export function nextWebhookAttemptAt(failed: FailedAttempt, options: WebhookRetryOptions): number | undefined {
  const { retryHours, baseMs = 5_000, capMs = 60 * 60 * 1000, minMs = 1_000, maxRetryAfterMs = MAX_RETRY_AFTER_MS, random = Math.random } = options;
  const ceiling = Math.min(capMs, baseMs * 2 ** (Math.max(1, failed.attempt) - 1));
  let delay = Math.max(minMs, Math.floor(random() * ceiling));
  if (failed.retryAfterMs !== undefined) delay = Math.max(delay, Math.min(failed.retryAfterMs, maxRetryAfterMs));
  const next = failed.now + delay;
  return next > failed.createdAt + retryHours * 60 * 60 * 1000 ? undefined : next;
}
