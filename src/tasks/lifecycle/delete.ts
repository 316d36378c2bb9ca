import { TaskRecord } from '../../state/state.entities';
import { Transition } from './transition';
import { isoTime } from '../../common/time/iso-time';

/**
 * The first step of deleting a task: one compare-and-set that marks its header `deletingAt`.
 * From then on the store hides the task from every read (it is not found), and no write can land
 * on it (a writer holding the old version loses, a create of the same id finds the version taken),
 * so a request still running elsewhere stops at its next lease renewal. The store then removes its
 * records in bounded batches (TaskDeletionService). Nothing is refused: whatever the task's state, the
 * owner may delete it (a request running on this replica is aborted before this, by the caller).
 */
export function markDeleting(): Transition<void> {
  return {
    reads: () => [],
    apply({ task }, now) {
      const next: TaskRecord = { ...task, deletingAt: isoTime(now), updatedAt: isoTime(now) };
      delete next.lease;
      delete next.queued;
      delete next.cancelRequested;
      return { task: next, requests: [], result: undefined };
    },
  };
}
