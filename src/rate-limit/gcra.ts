/**
 * The window math of every limit over time (src/rate-limit), the Generic Cell Rate Algorithm: a
 * limit of `limit` units per `periodMs` spends one unit every `e = periodMs / limit` ms, and the
 * state is one number, the theoretical arrival time `tat` (when the spent units are paid back).
 * A request costing `cost` units is admitted when `max(tat, now) + cost·e - now <= periodMs`: a
 * caller idle for a whole period may spend `limit` units at once (the burst), then one per `e`.
 * Compared with a fixed window it never admits 2×limit across a window edge; compared with a
 * sliding log it needs one number per key. The Redis script (rate-limit.lua.ts) is the same math.
 *
 * Times are ms (the Redis `TIME` floored to ms; Redis stores `tat` to the µs); `EPSILON_MS` absorbs
 * the rounding of `k·(periodMs/limit)`, so exactly `limit` back-to-back requests are admitted,
 * never `limit - 1`. It lets a request in up to 0.5 ms early: nothing a client can observe.
 */
export const EPSILON_MS = 0.5;

export interface GcraDecision {
  admitted: boolean;
  /** The new `tat` to store (admitted only). */
  tat: number;
  /** Units left to spend at once after this decision. */
  remaining: number;
  /** Refused: ms until this request would be admitted. Admitted: ms until the whole limit is back. */
  waitMs: number;
}

/** Spend `cost` units (a request: 1) if the window has room for all of them. */
export function gcraSpend(tat: number | undefined, now: number, limit: number, periodMs: number, cost = 1): GcraDecision {
  const e = periodMs / limit;
  const base = Math.max(tat ?? now, now);
  const next = base + cost * e;
  if (next - now > periodMs + EPSILON_MS) {
    return { admitted: false, tat: base, remaining: remainingOf(base, now, e, periodMs), waitMs: next - periodMs - now };
  }
  return { admitted: true, tat: next, remaining: remainingOf(next, now, e, periodMs), waitMs: next - now };
}

/**
 * Admission where the cost is known only afterwards (model tokens): room is left while the window
 * is not yet full (`tat < now + periodMs`); the cost is added by `gcraCharge` when known, so the
 * request that fills the window may overshoot it (once: the next is refused until it drained).
 */
export function gcraHasRoom(tat: number | undefined, now: number, limit: number, periodMs: number): GcraDecision {
  const e = periodMs / limit;
  const base = Math.max(tat ?? now, now);
  if (base - now >= periodMs) return { admitted: false, tat: base, remaining: 0, waitMs: base - periodMs - now + 1 };
  return { admitted: true, tat: base, remaining: remainingOf(base, now, e, periodMs), waitMs: base - now };
}

/** Adds `cost` spent units (unconditionally): the new `tat`. */
export function gcraCharge(tat: number | undefined, now: number, limit: number, periodMs: number, cost: number): number {
  return Math.max(tat ?? now, now) + cost * (periodMs / limit);
}

function remainingOf(tat: number, now: number, e: number, periodMs: number): number {
  return Math.max(0, Math.floor((periodMs - (tat - now) + EPSILON_MS) / e));
}
