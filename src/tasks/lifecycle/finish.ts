import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { TaskTiming, withLease, withoutLease } from './lease';
import { ended, leaseLost, Transition, waitingRequest } from './transition';
import { isoTime } from '../../common/time/iso-time';

/** What a renewal found: another replica asked (through the task) to cancel this request. */
export interface Renewal {
  cancelRequested: boolean;
}

/**
 * The running request extends its lease. Refused (LEASE_LOST) only when the task names another
 * holder or none: a lease that lapsed while the store stalled is still ours if nobody took over.
 */
export function renew(requestId: string, timing: TaskTiming): Transition<Renewal> {
  return {
    reads: () => [],
    apply({ task }, now) {
      if (task.lease?.requestId !== requestId) throw leaseLost(task, requestId);
      return { task: withLease(task, requestId, now, timing), requests: [], result: { cancelRequested: task.cancelRequested === requestId } };
    },
  };
}

/** The request the lease was handed to, if any (it runs next, on the replica that finished), and the final record as stored. */
export interface Finished {
  next?: RequestRecord;
  /** The record written: the one given, or Canceled when a cancel was asked of it meanwhile. */
  final: RequestRecord;
}

/**
 * The running request ends: its final record (Completed, Failed, Canceled or Paused) and the
 * task's status in one write, releasing the lease — or, when a follow-on waits and the request did
 * not pause, handing the lease straight to it (unless `handOver` is false: a replica that shuts
 * down leaves it waiting, with the lease free, for the next replica that looks to run it; the
 * lease is then written in the waiting request's name, already lapsed, so the lease sweep of a live
 * replica finds the task and runs it: `recoverLapsed`). A paused request keeps the waiting follow-on
 * waiting (it runs once the pause is decided and the request ends). Refused (LEASE_LOST) when the
 * lease is no longer this request's: its result cannot be stored over the request that took over.
 *
 * A cancel asked through the task (`cancelRequested`: another replica answered it 202) wins over
 * an answer that arrives before this replica's next renewal saw it: the request ends Canceled
 * (reason `canceled`), its answer kept in the record but never replayed. A cancel answered 202
 * therefore always ends the request Canceled; one that comes after this write finds it ended (409).
 * Found by the soak (issue 28): a store stall delayed the renewal past the model's answer.
 */
export function finish(outcome: RequestRecord, timing: TaskTiming, handOver = true): Transition<Finished> {
  return {
    reads: (task) => [task.queued],
    apply(state, now) {
      const { task } = state;
      if (task.lease?.requestId !== outcome.requestId) throw leaseLost(task, outcome.requestId);
      const cancelAsked = task.cancelRequested === outcome.requestId && (outcome.status === 'Completed' || outcome.status === 'Paused');
      const final = cancelAsked ? ended(outcome, 'Canceled', 'canceled', now) : outcome;
      const status = final.status as TaskRecord['status'];
      const waiting = waitingRequest(state);
      if (status === 'Paused') {
        const next = withoutLease({ ...task, status }, now, timing);
        const expires = final.pendingApprovals?.expiresAt;
        if (expires) next.pauseExpiresAt = Date.parse(expires);
        return { task: next, requests: [final], result: { final } };
      }
      if (waiting && handOver) {
        const handed: RequestRecord = { ...waiting, status: 'Running', updatedAt: isoTime(now) };
        const next = withLease({ ...task, status: 'Running' }, handed.requestId, now, timing);
        delete next.queued;
        delete next.pauseExpiresAt;
        return { task: next, requests: [final, handed], result: { next: handed, final } };
      }
      const next = withoutLease({ ...task, status }, now, timing);
      if (!waiting) delete next.queued;
      else next.lease = { requestId: waiting.requestId, expiresAt: now };
      delete next.pauseExpiresAt;
      return { task: next, requests: [final], result: { final } };
    },
  };
}
