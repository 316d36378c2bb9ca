import { leaseActive } from './lease';
import { abandonedHolder, TaskState, waitingRequest, withRecords } from './transition';

/**
 * The task as a read shows it: a request whose lease lapsed (its process died) reads as what it
 * is, `Failed` with reason `abandoned`, exactly as the next write to the task stores it
 * (`recoverLapsed`: the lease sweep within a bound, a follow-on, a watcher), so a read never shows
 * a dead request as running. The task reads `Failed`, or still `Running` when a follow-on waits
 * (it runs next). Nothing is written; a state with no lapsed holder is returned as it is.
 */
export function asRead(state: TaskState, now: number): TaskState {
  const { task } = state;
  if (leaseActive(task, now) || task.status === 'Paused') return state;
  const abandoned = abandonedHolder(state, now);
  if (!abandoned) return state;
  return {
    task: waitingRequest(state) ? task : { ...task, status: 'Failed' },
    requests: withRecords(state.requests.slice(), [abandoned]),
  };
}
