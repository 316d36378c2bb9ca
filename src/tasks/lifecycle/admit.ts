import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { leaseActive, stamped, TaskTiming, withLease, withoutLease } from './lease';
import { abandonedHolder, busy, Change, checkSession, ended, requestsAfter, TaskState, Transition, waitingRequest } from './transition';
import { isoTime } from '../../common/time/iso-time';

/** A request that runs now, with the task's earlier requests (for its conversation). */
export interface RunNow {
  request: RequestRecord;
  earlier: RequestRecord[];
}

export type Admission =
  | ({ kind: 'run' } & RunNow)
  /** Stored as the task's waiting request; `takeOver`: the request that waited before it runs now (its holder died). */
  | { kind: 'queued'; request: RequestRecord; takeOver?: RunNow };

export interface FollowOn {
  /** The new request (its id minted by the caller; seq and status are set here). */
  request: RequestRecord;
  /** The session the caller named, if any: it must be the task's. */
  sessionId?: string;
  onBusy: 'reject' | 'enqueue';
  timing: TaskTiming;
}

/** A new task and its first request, holding the lease (a create: `expectedVersion: 0`). */
export function admitNew(task: TaskRecord, request: RequestRecord, now: number, timing: TaskTiming): Change<RunNow> {
  const first: RequestRecord = { ...request, seq: 0, status: 'Running' };
  return {
    task: withLease({ ...task, status: 'Running', requestCount: 1 }, first.requestId, now, timing),
    requests: [first],
    result: { request: first, earlier: [] },
  };
}

/**
 * A follow-on. Runs when nothing holds the task; a lapsed lease belongs to a dead process, whose
 * request is closed as abandoned in the same write. A busy task refuses it (409), or with
 * `on_busy: enqueue` stores it as the one waiting request, superseding the one that waited. A
 * request left waiting behind a dead holder runs first (this replica runs it), and the follow-on
 * waits behind it. A task paused for approval refuses follow-ons until it is decided.
 */
export function admitFollowOn(input: FollowOn): Transition<Admission> {
  return {
    reads: 'all',
    apply(state: TaskState, now: number) {
      const { task } = state;
      checkSession(task, input.sessionId);
      if (task.status === 'Paused') throw paused(task);
      const seq = task.requestCount;
      const waiting = waitingRequest(state);
      if (leaseActive(task, now)) {
        if (input.onBusy !== 'enqueue') throw busy(task);
        return enqueue(state, input, seq, waiting, now, task);
      }
      const abandoned = abandonedHolder(state, now);
      const closed = abandoned ? [abandoned] : [];
      if (waiting && input.onBusy === 'enqueue') {
        // The waiting request's turn came when its holder died: it runs now, this one waits.
        const running: RequestRecord = { ...waiting, status: 'Running', updatedAt: isoTime(now) };
        const queued: RequestRecord = { ...input.request, ...placed(task, seq), status: 'Queued' };
        const writes = [...closed, running, queued];
        const next = withLease({ ...task, status: 'Running', requestCount: seq + 1, queued: queued.requestId }, running.requestId, now, input.timing);
        const earlier = requestsAfter(state.requests, writes).filter((r) => r.seq < running.seq);
        return { task: next, requests: writes, result: { kind: 'queued', request: queued, takeOver: { request: running, earlier } } };
      }
      const request: RequestRecord = { ...input.request, ...placed(task, seq), status: 'Running' };
      // The records this write changes before the new one (whose seq is past every stored record's).
      const before = [...closed, ...(waiting ? [ended(waiting, 'Canceled', 'superseded', now)] : [])];
      const next: TaskRecord = withLease({ ...task, status: 'Running', requestCount: seq + 1 }, request.requestId, now, input.timing);
      delete next.queued;
      // What ran before the new request: the stored records as this write leaves them (one copy: it runs on every follow-on).
      const earlier = requestsAfter(state.requests, before);
      return { task: next, requests: [...before, request], result: { kind: 'run', request, earlier } };
    },
  };
}

/** 409 TASK_PAUSED (upstream's answer to a message while a pause waits; `on_paused: refine` takes it instead). */
export function paused(task: TaskRecord): DomainError {
  return new DomainError(
    ErrorCode.TASK_PAUSED,
    `Task ${task.taskId} is waiting for an approval decision: decide, cancel, or (with on_paused: refine) refine it`,
  );
}

/** `on_busy: enqueue` on a busy task: the follow-on waits, superseding the one that waited. */
function enqueue(state: TaskState, input: FollowOn, seq: number, waiting: RequestRecord | undefined, now: number, task: TaskRecord): Change<Admission> {
  const queued: RequestRecord = { ...input.request, ...placed(task, seq), status: 'Queued' };
  const writes = [...(waiting ? [ended(waiting, 'Canceled', 'superseded', now)] : []), queued];
  const next = stamped({ ...task, requestCount: seq + 1, queued: queued.requestId }, now, input.timing);
  return { task: next, requests: writes, result: { kind: 'queued', request: queued } };
}

/** The new request's place: its task, session and position. */
function placed(task: TaskRecord, seq: number) {
  return { taskId: task.taskId, sessionId: task.sessionId, seq };
}

/** What recovering a task from a dead holder did. */
export type Recovery = { kind: 'run'; run: RunNow } | { kind: 'closed' } | { kind: 'none' };

/**
 * A task whose lease lapsed (its holder's process died before it finished or handed over) is
 * recovered in one write: the holder is closed as abandoned and the waiting follow-on, if any,
 * takes the lease and runs (on the replica that noticed first: the others lose the
 * compare-and-set, re-read, and find nothing to do). A lapsed lease with neither (its holder is
 * not running: nothing in the lifecycle leaves one) is dropped, so the lease index lets go of the
 * task. Nothing to do while the lease holds or the task waits for an approval.
 */
export function recoverLapsed(timing: TaskTiming): Transition<Recovery> {
  return {
    reads: 'all',
    apply(state: TaskState, now: number) {
      const { task } = state;
      if (leaseActive(task, now) || task.status === 'Paused') return { unchanged: { kind: 'none' } };
      const abandoned = abandonedHolder(state, now);
      const waiting = waitingRequest(state);
      if (!waiting) {
        if (abandoned) return { task: withoutLease({ ...task, status: 'Failed' }, now, timing), requests: [abandoned], result: { kind: 'closed' } };
        if (!task.lease) return { unchanged: { kind: 'none' } };
        return { task: withoutLease(task, now, timing), requests: [], result: { kind: 'closed' } };
      }
      const running: RequestRecord = { ...waiting, status: 'Running', updatedAt: isoTime(now) };
      const writes = [...(abandoned ? [abandoned] : []), running];
      const next = withLease({ ...task, status: 'Running' }, running.requestId, now, timing);
      delete next.queued;
      const earlier = requestsAfter(state.requests, writes).filter((r) => r.seq < running.seq);
      return { task: next, requests: writes, result: { kind: 'run', run: { request: running, earlier } } };
    },
  };
}
