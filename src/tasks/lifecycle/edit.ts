import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord } from '../../state/state.entities';
import { RunNow } from './admit';
import { leaseActive, TaskTiming, withLease } from './lease';
import { abandonedHolder, busy, checkSession, ended, findRequest, requestsAfter, TaskState, Transition, waitingRequest } from './transition';

export interface Edit {
  /** The request whose user turn is replaced. */
  requestId: string;
  /** The new request holding the edited turn (its id minted by the caller; seq and status are set here). */
  request: RequestRecord;
  /** The session the caller named, if any: it must be the task's. */
  sessionId?: string;
  timing: TaskTiming;
}

/**
 * Which requests an edit superseded, by request id → the id of the edit that superseded it. An
 * edit at `seq` n of request r (`edits: {seq: r.seq}`) supersedes every request from r.seq up to
 * n - 1 not already superseded by an earlier edit. Derived from the records (an edit writes only
 * its own request), so an edit of the first of hundreds of requests is still one small write.
 */
export function supersededBy(requests: readonly RequestRecord[]): Map<string, string> {
  const bySeq = [...requests].sort((a, b) => a.seq - b.seq);
  const marks = new Map<string, string>();
  for (const e of bySeq) {
    if (!e.edits) continue;
    for (const r of bySeq) {
      if (r.seq >= e.seq) break;
      if (r.seq >= e.edits.seq && !marks.has(r.requestId)) marks.set(r.requestId, e.requestId);
    }
  }
  return marks;
}

/** The earlier requests of `current` that an edit (up to and including `current`) has not superseded: its conversation. */
export function withoutSuperseded(earlier: readonly RequestRecord[], current: RequestRecord): readonly RequestRecord[] {
  // Without an edit nothing is hidden: the requests as they are, not a copy (this runs on every follow-on).
  if (!current.edits && !earlier.some((r) => r.edits)) return earlier;
  const marks = supersededBy([...earlier, current]);
  return earlier.filter((r) => !marks.has(r.requestId));
}

/**
 * Edit and rerun: the user turn of `requestId` is replaced by a new request, appended at the end
 * of the task (a new request id and `seq`), which runs now from the state before the edited
 * request: the edited request and every later one are kept, superseded by the new one (hidden from
 * the model). Refused while a request runs (409 TASK_BUSY) or the task waits for an approval (409
 * TASK_PAUSED), and for a request already superseded (409 REQUEST_SUPERSEDED: edit its
 * replacement). A lapsed lease's request is closed as abandoned, and a follow-on left waiting
 * behind it is canceled as superseded, in the same write. Without a `user_context` the edited
 * turn's is kept.
 */
export function edit(input: Edit): Transition<RunNow> {
  return {
    reads: 'all',
    apply(state: TaskState, now: number) {
      const { task } = state;
      checkSession(task, input.sessionId);
      const target = findRequest(state, input.requestId);
      if (!target) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${input.requestId}`);
      if (task.status === 'Paused') {
        throw new DomainError(ErrorCode.TASK_PAUSED, `Task ${task.taskId} is waiting for an approval decision: decide or cancel it before editing`);
      }
      if (leaseActive(task, now)) throw busy(task);
      const superseder = supersededBy(state.requests).get(target.requestId);
      if (superseder) {
        throw new DomainError(ErrorCode.REQUEST_SUPERSEDED, `Request ${target.requestId} was superseded by request ${superseder}: edit that one`);
      }
      const seq = task.requestCount;
      const abandoned = abandonedHolder(state, now);
      const waiting = waitingRequest(state);
      const request: RequestRecord = {
        ...input.request,
        taskId: task.taskId,
        sessionId: task.sessionId,
        seq,
        status: 'Running',
        edits: { requestId: target.requestId, seq: target.seq },
        ...((input.request.userContext ?? target.userContext) ? { userContext: input.request.userContext ?? target.userContext } : {}),
      };
      const writes = [...(abandoned ? [abandoned] : []), ...(waiting ? [ended(waiting, 'Canceled', 'superseded', now)] : []), request];
      const next = withLease({ ...task, status: 'Running', requestCount: seq + 1 }, request.requestId, now, input.timing);
      delete next.queued;
      const earlier = requestsAfter(state.requests, writes).filter((r) => r.seq < seq);
      return { task: next, requests: writes, result: { request, earlier } };
    },
  };
}
