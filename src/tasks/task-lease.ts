import { TaskRecord } from '../state/state.entities';

/** A lease is active until it expires; a crashed process's lease simply lapses. */
export function leaseActive(task: Pick<TaskRecord, 'lease'>, now = Date.now()): boolean {
  return task.lease !== undefined && task.lease.expiresAt > now;
}
