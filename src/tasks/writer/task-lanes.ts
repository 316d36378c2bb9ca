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
 * entry per task being written on this replica); waiters are the callers' own pending requests. A
 * caller's write waits at most `maxWaitMs` (default 2 s) for its turn and then goes ahead beside the
 * lane: when the holder's write is waiting out a stalled store (up to 30 s), a follow-on still gets
 * its own quick answer (409, or 503 from the store) instead of queuing behind it.
 */
export class TaskLanes {
  /**
   * Tenant id → task id → lane: looked up by the ids as they are (strings V8 has hashed already),
   * not by a key joined from them for every write (a new string to hash, twice a turn; issue 27).
   * A tenant's map goes with its last lane.
   */
  private readonly tenants = new Map<string, Map<string, Lane>>();

  constructor(private readonly maxWaitMs = 2000) {}

  /** Runs `work` when the lane of the tenant's task is free; `priority` work goes ahead of waiting ordinary work. */
  run<T>(tenantId: string, taskId: string, priority: boolean, work: () => Promise<T>): Promise<T> {
    let lanes = this.tenants.get(tenantId);
    const lane = lanes?.get(taskId);
    if (lane) return this.waitFor(lane, priority, work);
    // The lane is free (nearly always: one write of a task at a time): the write starts at once,
    // with one promise of the lane's own around it, not an async function's two (two writes a turn).
    if (!lanes) this.tenants.set(tenantId, (lanes = new Map()));
    const held: Lane = { lanes, taskId, tenantId };
    lanes.set(taskId, held);
    return this.hold(held, work);
  }

  /** Tasks with a write running or waiting on this replica (for tests and metrics). */
  get size(): number {
    let size = 0;
    for (const lanes of this.tenants.values()) size += lanes.size;
    return size;
  }

  private async waitFor<T>(lane: Lane, priority: boolean, work: () => Promise<T>): Promise<T> {
    const queue = priority ? (lane.urgent ??= []) : (lane.ordinary ??= []);
    let turn!: () => void;
    const gotTurn = new Promise<boolean>((resolve) => queue.push((turn = () => resolve(true))));
    if (priority) await gotTurn;
    else {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.maxWaitMs)));
      const ours = await Promise.race([gotTurn, timedOut]);
      clearTimeout(timer);
      const waiting = queue.indexOf(turn);
      if (!ours && waiting >= 0) {
        // Waited long enough: leave the queue and write beside the lane (the compare-and-set still decides).
        queue.splice(waiting, 1);
        return work();
      }
      // Otherwise the lane was handed to us (possibly just as the wait ran out): it is ours to release.
    }
    return this.hold(lane, work);
  }

  /** Runs `work` holding `lane`, then hands the lane to the next waiter (urgent first) or frees it. */
  private hold<T>(lane: Lane, work: () => Promise<T>): Promise<T> {
    let running: Promise<T>;
    try {
      running = work();
    } catch (err) {
      this.release(lane);
      return Promise.reject(err as Error);
    }
    return running.then(
      (value) => {
        this.release(lane);
        return value;
      },
      (err: unknown) => {
        this.release(lane);
        throw err;
      },
    );
  }

  private release(lane: Lane): void {
    const next = lane.urgent?.shift() ?? lane.ordinary?.shift();
    if (next) return next();
    lane.lanes.delete(lane.taskId);
    if (lane.lanes.size === 0 && this.tenants.get(lane.tenantId) === lane.lanes) this.tenants.delete(lane.tenantId);
  }
}

/** A task's lane: it exists while a write of the task runs; its waiters, made on the first wait. */
interface Lane {
  /** The tenant's lanes it is in, and under which ids. */
  readonly lanes: Map<string, Lane>;
  readonly taskId: string;
  readonly tenantId: string;
  urgent?: (() => void)[];
  ordinary?: (() => void)[];
}
