import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestEndReason, RequestRecord, TaskRecord } from '../../state/state.entities';
import { isoTime } from '../../common/time/iso-time';

/**
 * The state a transition decides on: the task header as read, and the requests it asked to read
 * (`Transition.reads`), in `seq` order.
 */
export interface TaskState {
  task: TaskRecord;
  requests: RequestRecord[];
}

/** What a transition writes (one compare-and-set: the header and these requests) and answers. */
export interface Change<R> {
  task: TaskRecord;
  requests: RequestRecord[];
  result: R;
}

/**
 * One step of the task lifecycle, as a pure function of the state read and the time: no I/O, no
 * randomness (ids are minted by the caller), so the writer can re-apply it to a fresher state after
 * losing a compare-and-set, and unit specs can check each allowed and refused state. A refusal
 * throws a DomainError; `unchanged` writes nothing.
 */
export interface Transition<R> {
  /** Which requests to read with the task: all of them, or the ids named (missing ones are skipped). */
  reads: 'all' | ((task: TaskRecord) => (string | undefined)[]);
  /** Set on the expiry of a due pause, which the writer applies before any other transition. */
  settles?: boolean;
  apply(state: TaskState, now: number): Change<R> | { unchanged: R };
}

export function findRequest(state: TaskState, requestId: string | undefined): RequestRecord | undefined {
  return requestId === undefined ? undefined : state.requests.find((r) => r.requestId === requestId);
}

/** The requests as they will be after `writes` (by seq), for the conversation of a request that runs next. */
export function requestsAfter(requests: RequestRecord[], writes: RequestRecord[]): RequestRecord[] {
  return withRecords(requests.slice(), writes);
}

/** Puts each record in its `seq`'s place (replacing, or inserted in order) in `records`, which are in `seq` order; returns them. */
export function withRecords(records: RequestRecord[], writes: RequestRecord[]): RequestRecord[] {
  for (const w of writes) {
    const at = indexOfSeq(records, w.seq);
    if (records[at]?.seq === w.seq) records[at] = w;
    else records.splice(at, 0, w);
  }
  return records;
}

/** Where `seq` is, or goes, in records in `seq` order (seqs run from 0: usually at index `seq`, or at the end). */
export function indexOfSeq(records: RequestRecord[], seq: number): number {
  if (records[seq]?.seq === seq) return seq;
  let lo = 0;
  let hi = records.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (records[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A request ended without completing, with why. */
export function ended(
  request: RequestRecord,
  status: 'Failed' | 'Canceled',
  reason: RequestEndReason,
  now: number,
  error?: { code: string; message: string },
): RequestRecord {
  const next: RequestRecord = { ...request, status, reason, updatedAt: isoTime(now), ...(error ? { error } : {}) };
  delete next.pendingApprovals;
  return next;
}

/** The running request of a lapsed lease: its process died. Undefined when there is none. */
export function abandonedHolder(state: TaskState, now: number): RequestRecord | undefined {
  const holder = findRequest(state, state.task.lease?.requestId);
  if (!holder || holder.status !== 'Running') return undefined;
  return ended(holder, 'Failed', 'abandoned', now, {
    code: ErrorCode.ABANDONED,
    message: 'The process running this request stopped before it finished',
  });
}

/** The task's waiting request (`on_busy: enqueue`), when it is still waiting. */
export function waitingRequest(state: TaskState): RequestRecord | undefined {
  const queued = findRequest(state, state.task.queued);
  return queued?.status === 'Queued' ? queued : undefined;
}

/** A session the caller named must be the task's (422 naming `session_id`). */
export function checkSession(task: TaskRecord, sessionId: string | undefined): void {
  if (sessionId && sessionId !== task.sessionId) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, 'session_id does not match the task', {
      errors: [{ field: 'session_id', message: `task ${task.taskId} belongs to another session` }],
    });
  }
}

export function busy(task: TaskRecord, why = `has a request running (${task.lease?.requestId})`): DomainError {
  return new DomainError(ErrorCode.TASK_BUSY, `Task ${task.taskId} ${why}`, { retryAfter: 1 });
}

export function leaseLost(task: TaskRecord, requestId: string): DomainError {
  return new DomainError(
    ErrorCode.LEASE_LOST,
    `Request ${requestId} no longer holds task ${task.taskId}: its lease lapsed and ${task.lease ? `request ${task.lease.requestId}` : 'another request'} took over`,
  );
}
