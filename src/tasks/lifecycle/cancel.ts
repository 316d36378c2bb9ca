import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestEndReason, RequestRecord, TaskRecord } from '../../state/state.entities';
import { leaseActive, stamped, TaskTiming, withoutLease } from './lease';
import { Change, ended, TaskState, Transition, waitingRequest } from './transition';

export type Cancellation =
  /** The paused request was canceled (its pending calls never run). */
  | { kind: 'paused'; requestId: string }
  /** The request runs on another replica: asked through the task; it aborts on its next renewal. */
  | { kind: 'requested'; requestId: string };

/**
 * Cancel of a task by its owner: a paused request is canceled at once (one compare-and-set, so it
 * races safely with a decision); a running one is asked to stop through the task record (the
 * replica running it aborts on its next renewal; a cancel that reaches that replica aborts it
 * directly, without this). Nothing running or paused: 409 TASK_NOT_RUNNING.
 */
export function cancel(timing: TaskTiming): Transition<Cancellation> {
  return {
    reads: 'all',
    apply(state, now) {
      const { task } = state;
      if (leaseActive(task, now)) {
        const requestId = task.lease!.requestId;
        if (task.cancelRequested === requestId) return { unchanged: { kind: 'requested', requestId } };
        return { task: stamped({ ...task, cancelRequested: requestId }, now, timing), requests: [], result: { kind: 'requested', requestId } };
      }
      if (task.status === 'Paused') {
        const change = endPause(state, 'canceled', now, timing);
        if (change) return { ...change, result: { kind: 'paused', requestId: change.result.requestId } };
      }
      throw new DomainError(ErrorCode.TASK_NOT_RUNNING, `Task ${task.taskId} has no running or paused request to cancel`);
    },
  };
}

/**
 * A pause older than `spec.governance.approval_ttl_seconds` ends Canceled as `expired`. Applied by
 * the task writer before any read or write of a task whose pause is due, so it holds even when no
 * replica was running at the moment it expired.
 */
export function expirePause(timing: TaskTiming): Transition<void> {
  return {
    reads: 'all',
    settles: true,
    apply(state, now) {
      if (!pauseDue(state.task, now)) return { unchanged: undefined };
      const change = endPause(state, 'expired', now, timing);
      if (!change) {
        // Paused with no paused request (cannot happen through the lifecycle): just drop the deadline.
        const task = stamped({ ...state.task }, now, timing);
        delete task.pauseExpiresAt;
        return { task, requests: [], result: undefined };
      }
      return { ...change, result: undefined };
    },
  };
}

export function pauseDue(task: TaskRecord, now: number): boolean {
  return task.status === 'Paused' && task.pauseExpiresAt !== undefined && task.pauseExpiresAt <= now;
}

/**
 * Ends the paused request without running it (canceled, rejected, expired): the request and the task
 * end Canceled, and a follow-on waiting behind the pause is canceled too (nothing runs after a
 * canceled task unless its owner sends a new message).
 */
export function endPause(
  state: TaskState,
  reason: RequestEndReason,
  now: number,
  timing: TaskTiming,
  update: (r: RequestRecord) => RequestRecord = (r) => r,
): Change<{ requestId: string }> | undefined {
  const paused = [...state.requests].reverse().find((r) => r.status === 'Paused');
  if (!paused) return undefined;
  const waiting = waitingRequest(state);
  const writes = [update(ended(paused, 'Canceled', reason, now)), ...(waiting ? [ended(waiting, 'Canceled', 'canceled', now)] : [])];
  const task = withoutLease({ ...state.task, status: 'Canceled' }, now, timing);
  delete task.queued;
  delete task.pauseExpiresAt;
  return { task, requests: writes, result: { requestId: paused.requestId } };
}
