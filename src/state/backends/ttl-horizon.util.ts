/**
 * When a backend's own expiry (Redis PEXPIREAT, DynamoDB `ttl`) should remove a task's records.
 *
 * Tasks may use a sliding expiry (renewed on every write), but re-expiring every request record of a
 * task on every commit would make a commit cost proportional to the task's history. So the records
 * are given a horizon beyond `expiresAt` (twice the remaining lifetime) and are only re-expired when
 * a new `expiresAt` passes the stored horizon: at most once per lifetime-length, however often the
 * task is written. Reads still filter on `expiresAt`, so the horizon only delays garbage collection,
 * never what callers see.
 */
export function ttlHorizon(expiresAtMs: number, now = Date.now()): number {
  return expiresAtMs + Math.max(expiresAtMs - now, 0);
}

/** `expiresAt` (ISO) as epoch milliseconds, or undefined when the task never expires. */
export function expiresAtMs(expiresAt: string | undefined): number | undefined {
  if (expiresAt === undefined) return undefined;
  const ms = Date.parse(expiresAt);
  if (Number.isNaN(ms)) throw new TypeError(`expiresAt is not an ISO time: ${expiresAt}`);
  return ms;
}
