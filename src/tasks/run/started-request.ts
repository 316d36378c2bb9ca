import type { RequestRecord } from '../../state/state.entities';
import type { RequestEventLog } from '../events/task-event-log.service';
import type { StateResponse } from '../views/state-response';
import type { RunOptions } from './request-runner.service';

/** An admitted request, ready to run (or, when queued, to be watched). */
export interface StartedRequest {
  ids: { task_id: string; session_id: string; request_id: string };
  /** The task was busy and the agent enqueues (`on_busy: enqueue`): the request waits its turn. */
  queued: boolean;
  /** Nothing is left to run: the decision rejected every pending call, and the request ended with it. */
  finished?: boolean;
  /**
   * A repeat of a POST with the same Idempotency-Key (src/tasks/idempotency/): nothing runs again;
   * the request its first copy started or decided, as read when the repeat arrived.
   */
  replayed?: RequestRecord;
  /** Plain JSON: runs the request and answers its StateResponse (a queued one is watched in the background instead: 202). */
  run(options?: Pick<RunOptions, 'bearerToken'>): Promise<StateResponse | undefined>;
  /** Streaming: runs (or watches) it with every event recorded in its event log; follow the log after `after`. */
  stream(options: { bearerToken?: string; instance: string }): Promise<{ log: RequestEventLog; after: number }>;
}
