/**
 * One lane per task on this replica: the writes of one task run one after another, the running
 * request's own writes (lease renewal, its final state) ahead of callers' writes.
 *
 * Why: every write of a task is a compare-and-set on its version, so N writers of one task on one
 * replica only make each other lose and re-read. With a crowd of follow-ons (30 enqueueing at once
 * on a DynamoDB that answers in hundreds of milliseconds), the lease holder's renewal kept losing
 * until its lease lapsed and a follow-on took the task over, throwing away an answer the model had
 * already given. With lanes, a replica sends at most one write per task at a time, and the holder's
 * goes first; across replicas the compare-and-set still decides.
 *
 * Bounded: a lane exists only while a write of its task runs or waits (the map holds at most one
 * entry per task being written on this replica); waiters are the callers' own pending requests.
 */
export class TaskLanes {
  private readonly lanes = new Map<string, Lane>();

  /** Runs `work` when the lane of `key` is free; `priority` work goes ahead of waiting ordinary work. */
  async run<T>(key: string, priority: boolean, work: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { busy: false, urgent: [], ordinary: [] };
      this.lanes.set(key, lane);
    }
    if (lane.busy) await new Promise<void>((turn) => (priority ? lane.urgent : lane.ordinary).push(turn));
    lane.busy = true;
    try {
      return await work();
    } finally {
      const next = lane.urgent.shift() ?? lane.ordinary.shift();
      if (next) next();
      else {
        lane.busy = false;
        this.lanes.delete(key);
      }
    }
  }

  /** Tasks with a write running or waiting on this replica (for tests and metrics). */
  get size(): number {
    return this.lanes.size;
  }
}

interface Lane {
  busy: boolean;
  urgent: (() => void)[];
  ordinary: (() => void)[];
}
