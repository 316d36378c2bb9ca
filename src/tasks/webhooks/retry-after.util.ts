/** The longest wait a receiver's `Retry-After` can ask for; past it the schedule's own backoff goes on. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * `Retry-After` (RFC 9110 §10.2.3) in milliseconds from `now`: delay-seconds or an HTTP-date, capped
 * at `maxMs` so that a receiver cannot park a delivery for days; a date in the past is 0. Anything
 * else (a negative or fractional number, garbage) is undefined, as if the header were absent.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number, maxMs = MAX_RETRY_AFTER_MS): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // Date.parse reads IMF-fixdate and the obsolete forms too; a bare number was taken above, so a
    // value such as "-1" or "1.5" cannot pass as a year here.
    if (!/[a-z]/i.test(text)) return undefined;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), maxMs);
}
