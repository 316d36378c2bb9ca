import { TaskRecord } from '../../state/state.entities';
import { frozen } from '../../state/state-store.util';
import { isoTime } from '../../common/time/iso-time';

/** How long a lease lasts without renewal, and how long an idle task lives (`TA_TASK_TTL_SECONDS`). */
export interface TaskTiming {
  leaseMs: number;
  ttlSeconds?: number;
  /**
   * How far replicas' readings of the store's clock may disagree (`StateStore.clockSkewMs`): a
   * lease is written this much longer, so no replica judges it lapsed before its holder would.
   */
  clockSkewMs?: number;
}

/**
 * A lease is active until it expires; a crashed process's lease simply lapses. `now` is the
 * store's clock (`StateStore.now()`), never this process's own: see docs/api.md, "Leases and clocks".
 */
export function leaseActive(task: Pick<TaskRecord, 'lease'>, now: number): boolean {
  return task.lease !== undefined && task.lease.expiresAt > now;
}

/** The task with `requestId` holding its lease from `now` (stamped: see `stamped`). */
export function withLease(task: TaskRecord, requestId: string, now: number, timing: TaskTiming): TaskRecord {
  const next: TaskRecord = { ...task, lease: frozen({ requestId, expiresAt: now + timing.leaseMs + (timing.clockSkewMs ?? 0) }) };
  // A cancel asked of an earlier holder does not carry over to the new one.
  if (task.cancelRequested !== requestId) delete next.cancelRequested;
  return stamped(next, now, timing);
}

/** The task with no lease (and no pending cancel): nothing runs on it. */
export function withoutLease(task: TaskRecord, now: number, timing: TaskTiming): TaskRecord {
  // Left out by rest properties, not `delete`: deleting a property of a copy turns it into a
  // dictionary (a slow object to read, copy and store), and every turn ends here.
  const { lease: _lease, cancelRequested: _cancel, ...next } = task;
  return stamped(next, now, timing);
}

/**
 * Every write stamps `updatedAt` and the sliding expiry, here and only here. A task never expires
 * while its lease holds (plus one lease length of slack for a renewal delayed by a stalled store):
 * a request longer than the TTL keeps its task alive through its own writes, instead of finding it
 * gone (which a compare-and-set would report as a conflict).
 */
export function stamped(task: TaskRecord, now: number, timing: TaskTiming): TaskRecord {
  const next: TaskRecord = { ...task, updatedAt: isoTime(now) };
  if (timing.ttlSeconds) {
    const idle = now + timing.ttlSeconds * 1000;
    const held = next.lease ? next.lease.expiresAt + timing.leaseMs : 0;
    next.expiresAt = isoTime(Math.max(idle, held));
  }
  return next;
}
