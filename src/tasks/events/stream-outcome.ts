import type { Logger } from 'pino';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { problemOf } from '../../common/errors/problem-of';
import type { StreamEvent } from '../../state/state-store';
import type { RequestRecord } from '../../state/state.entities';
import { idsOf, outcomeEvents } from '../views/request-response';

/** A resumed request's stream ids go on from `{seq}-{k·IDS_PER_DECISION}` for its k-th decision (monotonic per task). */
export const IDS_PER_DECISION = 100_000;

/**
 * The n of the last event of an outcome that no stream of the request recorded (it was not
 * streamed, its replica died, its stream's writes to the store failed): above every n a stream can
 * have used, so it sorts after whatever a client saw, however far the stored log lagged behind the
 * client (docs/api.md, Streaming: "The outcome's id, and 204"). A stream numbers its events one by
 * one from 0 (or k·IDS_PER_DECISION): it never comes near 2^53.
 */
export const OUTCOME_N = Number.MAX_SAFE_INTEGER;

/**
 * How long after a request's record ended its stream's final event may still be on its way to the
 * store (written right after the record): until then a reader waits for it rather than sending the
 * outcome under another id.
 */
export const FINAL_GRACE_MS = 1000;

type Agent = Pick<AgentDefinition, 'prefix' | 'source'>;
type Event = Pick<StreamEvent, 'event' | 'data'>;

/** Ended, for its stream: Completed, Failed, Canceled, or Paused (a resume is another stream). */
export function hasEnded(record: Pick<RequestRecord, 'status'>): boolean {
  return record.status !== 'Queued' && record.status !== 'Running';
}

/** The record ended long enough ago (`now`: the store's clock) that its stream's final event is stored by now, or never will be. */
export function settled(record: Pick<RequestRecord, 'updatedAt'>, now: number): boolean {
  return Date.parse(record.updatedAt) + FINAL_GRACE_MS <= now;
}

/**
 * Whether `e`, a final event a stream recorded, tells the record's outcome as it stands: an `error`
 * a Failed request's, a `final-response` of the same status (for a pause, the same pause: a
 * request that paused and was resumed has ended its earlier stream only).
 */
export function isOutcomeOf(e: Event, record: RequestRecord): boolean {
  if (e.event === 'error') return record.status === 'Failed';
  if (e.event !== 'final-response' || e.data.status !== record.status) return false;
  if (record.status !== 'Paused') return true;
  const content = e.data.content as { pause_id?: unknown } | undefined;
  return content?.pause_id === record.pendingApprovals?.pauseId;
}

/**
 * The outcome events of an ended request that no stream recorded, with the ids every replica gives
 * them: an outcome that ends the request for good (Completed, Failed, Canceled) ends at OUTCOME_N
 * (`cancelled` just before its `final-response`); a pause follows the request's stored events
 * (`last`: the n of the last one, -1 for none), from its stream's first id at the earliest, so its
 * resume streams (from (pauses decided) × IDS_PER_DECISION, and after the stored log) go on after it.
 */
export function synthesizedOutcome(agent: Agent, record: RequestRecord, last: number, logger: Logger): StreamEvent[] {
  const events = outcomeOf(agent, record, logger);
  const start = outcomeStart(record, events.length, last);
  return events.map((e, i) => ({ n: start + i, ...e }));
}

/** The n of the last event of `synthesizedOutcome`, without building it. */
export function synthesizedFinalN(record: RequestRecord, last: number): number {
  const count = record.status === 'Paused' || record.status === 'Canceled' ? 2 : 1;
  return outcomeStart(record, count, last) + count - 1;
}

/** An `error` event's data: the problem details, naming the task and the request. */
export function errorEventData(err: unknown, instance: string, logger: Logger, ids: { task_id: string; request_id: string }): Record<string, unknown> {
  return { ...problemOf(err, instance, logger, { task_id: ids.task_id }), task_id: ids.task_id, request_id: ids.request_id };
}

/** As a live stream ends: `outcomeEvents`, or for a failed request its `error` event. */
function outcomeOf(agent: Agent, record: RequestRecord, logger: Logger): Event[] {
  try {
    return outcomeEvents(agent, record);
  } catch (err) {
    return [{ event: 'error', data: errorEventData(err, agent.prefix, logger, idsOf(record)) }];
  }
}

function outcomeStart(record: RequestRecord, count: number, last: number): number {
  if (record.status !== 'Paused') return OUTCOME_N - count + 1;
  return Math.max(last + 1, (record.approvals?.length ?? 0) * IDS_PER_DECISION);
}
