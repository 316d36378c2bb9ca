import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { Change, TaskState, Transition } from './transition';

/** Shared by the lifecycle unit specs: a fixed clock, a lease length, records and the two outcomes of a transition. */
export const NOW = 1_800_000_000_000;
export const timing = { leaseMs: 1000 };

export function taskRecord(over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: 't',
    sessionId: 's',
    tenantId: 'ten',
    ownerId: 'o',
    agent: 'A:1',
    status: 'Completed',
    version: 3,
    requestCount: 1,
    lastEventSeq: 0,
    metadata: {},
    createdAt: 'c',
    updatedAt: 'u',
    ...over,
  };
}

export function requestRecord(seq: number, status: RequestRecord['status'], over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: `r${seq}`,
    taskId: 't',
    sessionId: 's',
    tenantId: 'ten',
    ownerId: 'o',
    seq,
    status,
    messages: [],
    toolCalls: [],
    tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
    createdAt: 'c',
    updatedAt: 'u',
    ...over,
  };
}

/** The change a transition writes (it must write one). */
export function apply<R>(t: Transition<R>, state: TaskState, now = NOW): Change<R> {
  const out = t.apply(state, now);
  if ('unchanged' in out) throw new Error('expected a change');
  return out;
}

/** The error code a transition refuses with (it must refuse). */
export function refusal(fn: () => unknown): ErrorCode {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err.code;
    throw err;
  }
  throw new Error('expected a refusal');
}
