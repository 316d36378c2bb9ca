import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { supersededBy } from './edit';
import { stamped, TaskTiming } from './lease';
import { findRequest, TaskState, Transition } from './transition';

export interface Fork {
  /** The new task's id (minted by the caller). */
  taskId: string;
  /** The last request the fork holds; default: every completed request the model sees. */
  requestId?: string;
  /** The new task's session; default: the source's. */
  sessionId?: string;
  /** Mints the id of each copied request and message (the caller's: transitions hold no randomness). */
  mint: () => string;
  timing: TaskTiming;
}

/** The new task of a fork and its requests, to be created (`expectedVersion: 0`). */
export interface Forked {
  task: TaskRecord;
  requests: RequestRecord[];
}

/**
 * Fork: a new task (new id, same owner and agent, the source's session unless another is named)
 * holding the conversation of the source up to and including `requestId`: the completed requests
 * the model saw when that request ran (the ones no edit had superseded by then; failed and
 * canceled requests are never replayed, so they are not copied). Without `requestId`, every
 * completed request the model sees now. Copies get new request and message ids and `seq` 0..n-1;
 * the new task is Completed, nothing running. The source is only read. A request that did not
 * complete is 422 (`request_id`), one of another task 404.
 */
export function fork(state: TaskState, input: Fork, now: number): Forked {
  const { task } = state;
  let upTo = Infinity;
  if (input.requestId !== undefined) {
    const target = findRequest(state, input.requestId);
    if (!target) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${input.requestId}`);
    if (target.status !== 'Completed') throw invalid(`request ${target.requestId} is ${target.status}: only a completed request can end a fork`);
    upTo = target.seq;
  }
  const considered = state.requests.filter((r) => r.seq <= upTo);
  const marks = supersededBy(considered);
  const kept = considered.filter((r) => r.status === 'Completed' && !marks.has(r.requestId)).sort((a, b) => a.seq - b.seq);
  if (!kept.length) throw invalid(`task ${task.taskId} has no completed request to fork`);
  const created = new Date(now).toISOString();
  const sessionId = input.sessionId ?? task.sessionId;
  const requests = kept.map((r, seq): RequestRecord => {
    const copy: RequestRecord = {
      ...r,
      requestId: input.mint(),
      taskId: input.taskId,
      sessionId,
      seq,
      messages: r.messages.map((m) => ({ ...m, id: input.mint() })),
    };
    delete copy.edits;
    delete copy.pendingApprovals;
    return copy;
  });
  const header: TaskRecord = stamped(
    {
      taskId: input.taskId,
      sessionId,
      tenantId: task.tenantId,
      ownerId: task.ownerId,
      agent: task.agent,
      status: 'Completed',
      version: 0,
      requestCount: requests.length,
      lastEventSeq: 0,
      metadata: { ...task.metadata, forked_from_task_id: task.taskId, forked_from_request_id: kept[kept.length - 1]!.requestId },
      createdAt: created,
      updatedAt: created,
    },
    now,
    input.timing,
  );
  return { task: header, requests };
}

/**
 * A fork larger than one commit (DynamoDB takes 49 requests per transaction) is created with its
 * first requests, then grows by this transition, one batch a write: each write leaves a consistent,
 * shorter copy (`requestCount` = the requests written so far). Re-applying it is harmless.
 */
export function appendForked(batch: RequestRecord[], timing: TaskTiming): Transition<void> {
  return {
    reads: () => [],
    apply({ task }, now) {
      const count = Math.max(task.requestCount, ...batch.map((r) => r.seq + 1));
      return { task: stamped({ ...task, requestCount: count }, now, timing), requests: batch, result: undefined };
    },
  };
}

function invalid(message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'request_id', message }] });
}
