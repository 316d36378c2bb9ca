import { Page } from './state-store';
import { TaskRecord } from './state.entities';

/**
 * Where a dead delivery sits in the lease index: past any `before` a sweep asks for (and within the
 * 15 digits of DynamoDB's index keys), yet listed, so the admin can page through dead deliveries.
 */
export const DEAD_DELIVERY_AT = 900_000_000_000_000;

/**
 * When the task must next be looked at with nobody calling (the lease index:
 * StateStore.listLapsedLeases): its lease's expiry, its pause's expiry (approval_ttl_seconds) or
 * its outbox's first due delivery, whichever comes first (a delivered one not at all); a dead
 * delivery only lists it at DEAD_DELIVERY_AT; undefined when there is nothing to wait for, and for
 * a task marked for deletion.
 */
export function wakeAt(task: Pick<TaskRecord, 'lease' | 'outbox' | 'deletingAt' | 'status' | 'pauseExpiresAt'>): number | undefined {
  if (task.deletingAt !== undefined) return undefined;
  let at = task.lease?.expiresAt;
  if (task.status === 'Paused' && task.pauseExpiresAt !== undefined && (at === undefined || task.pauseExpiresAt < at)) at = task.pauseExpiresAt;
  for (const d of task.outbox ?? []) {
    if (d.deliveredAt !== undefined) continue;
    const due = d.dead ? DEAD_DELIVERY_AT : d.dueAt;
    if (at === undefined || due < at) at = due;
  }
  return at;
}

export function isExpired(task: Pick<TaskRecord, 'expiresAt'>, now = Date.now()): boolean {
  return task.expiresAt !== undefined && Date.parse(task.expiresAt) <= now;
}

/** Expired, or marked for deletion: reads treat it as missing. */
export function isHidden(task: Pick<TaskRecord, 'expiresAt' | 'deletingAt'>, now = Date.now()): boolean {
  return task.deletingAt !== undefined || isExpired(task, now);
}

/** Pages an in-order list with an opaque offset cursor (base64url of the next index). */
export function pageOf<T>(all: T[], page: { limit: number; cursor?: string }): Page<T> {
  const start = page.cursor ? decodeOffset(page.cursor) : 0;
  const items = all.slice(start, start + page.limit);
  const next = start + items.length;
  return next < all.length ? { items, nextCursor: encodeOffset(next) } : { items };
}

export function encodeOffset(n: number): string {
  return Buffer.from(String(n)).toString('base64url');
}

export function decodeOffset(cursor: string): number {
  const n = Number(Buffer.from(cursor, 'base64url').toString());
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/**
 * A deep copy, frozen: stored state no caller can change by mutating an object it holds. Frozen
 * subtrees are shared, not copied (they cannot change), so re-storing a record read back is cheap.
 */
export function frozenCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy)) as T;
  // A shallow clone first (one step for V8, where adding the keys one by one to an empty object
  // walked its shapes key by key), then only the values that are not frozen yet copied in turn.
  return frozenOwn({ ...value } as Record<string, unknown>) as T;
}

/**
 * `frozenCopy` of an object the caller has just made and hands over (a spread of a record with a
 * field or two more): frozen where it is, its values copied as frozenCopy copies them, so the
 * object is not cloned a second time.
 */
export function frozenOwn<T extends object>(fresh: T): Readonly<T> {
  const o = fresh as Record<string, unknown>;
  for (const key in o) {
    const v = o[key];
    if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) o[key] = frozenCopy(v);
  }
  return Object.freeze(fresh);
}

/**
 * `value` frozen where it is, for a value just made whose own values are primitives or frozen
 * already: frozenCopy and sealedFor then keep it as it is. A turn's records are built of such
 * parts (the user's message and its items, the answer, the usage, the model call's trace, the
 * lease), and copying each of them to freeze it, twice a turn, was ~2 % of a turn (issue 27).
 * Never for a value with a mutable part inside: a frozen value is taken as frozen all the way down.
 */
export function frozen<T extends object>(value: T): T {
  return Object.freeze(value);
}

/**
 * A request record as stored: stamped with its tenant and frozen. One the task writer has already
 * sealed (frozen, this tenant's) is kept as it is, so the writer, its cache and the memory store
 * share one copy instead of each freezing its own.
 */
export function sealedFor<T extends { tenantId?: string }>(record: T, tenantId: string): Readonly<T> {
  return Object.isFrozen(record) && record.tenantId === tenantId ? record : frozenOwn({ ...record, tenantId });
}
