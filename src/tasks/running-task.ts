import type { Logger } from 'pino';
import { StateStore } from '../state/state-store';
import { RequestRecord, TaskRecord } from '../state/state.entities';
import { VersionConflictError } from '../state/state.errors';

/** How many concurrent writers (cancels, queued follow-ons) one write adopts before giving up. */
const MAX_ADOPTIONS = 8;

export interface TaskTiming {
  leaseMs: number;
  ttlSeconds?: number;
}

/** `expiresAt` for a task written now, when tasks expire. */
export function expiryFrom(timing: TaskTiming, now = Date.now()): string | undefined {
  return timing.ttlSeconds ? new Date(now + timing.ttlSeconds * 1000).toISOString() : undefined;
}

/**
 * A request that holds its task's lease. It renews the lease while the work runs and writes the
 * final state; all of its writes are serialized and each is a compare-and-set on the version the
 * previous write returned, so a request that lost its lease (it was presumed dead and taken over)
 * can no longer change the task.
 */
export class RunningTask {
  private chain: Promise<unknown> = Promise.resolve();
  private timer?: NodeJS.Timeout;

  /** Called when another replica asked (through the task record) to cancel this request. */
  onCancelRequested?: () => void;

  constructor(
    private readonly store: StateStore,
    public task: TaskRecord,
    public request: RequestRecord,
    private readonly timing: TaskTiming,
    private readonly logger: Logger,
  ) {}

  startRenewal(): void {
    const every = Math.max(50, Math.floor(this.timing.leaseMs / 3));
    this.timer = setInterval(() => {
      this.serialized(() =>
        this.write({ lease: { requestId: this.request.requestId, expiresAt: Date.now() + this.timing.leaseMs } }).then(() => undefined),
      ).catch((err) => {
        this.stopRenewal();
        this.logger.warn({ err, task_id: this.task.taskId, request_id: this.request.requestId }, 'lease renewal failed');
      });
    }, every);
    this.timer.unref();
  }

  stopRenewal(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Writes the request's final record and the task's new state, releasing the lease, or, when a
   * follow-on is queued (`on_busy: enqueue`), handing the lease straight to it in the same write.
   * Resolves with the queued request it handed over to, if any. A request that pauses for an
   * approval (`handOver: false`) releases the lease but keeps the queued follow-on waiting: it runs
   * when the paused request is decided and ends.
   */
  finish(taskPatch: Partial<TaskRecord>, request: RequestRecord, { handOver = true } = {}): Promise<RequestRecord | undefined> {
    this.stopRenewal();
    return this.serialized(async () => {
      this.request = request;
      let handedTo: RequestRecord | undefined;
      await this.write(async (current) => {
        handedTo = undefined;
        if (!current.queued || !handOver) return { patch: { ...taskPatch, lease: undefined }, requests: [request] };
        const queued = await this.store.getRequest(current.tenantId, current.queued);
        if (!queued || queued.status !== 'Queued') return { patch: { ...taskPatch, lease: undefined, queued: undefined }, requests: [request] };
        const now = new Date().toISOString();
        handedTo = { ...queued, status: 'Running', updatedAt: now };
        return {
          patch: {
            status: 'Running',
            queued: undefined,
            lease: { requestId: queued.requestId, expiresAt: Date.now() + this.timing.leaseMs },
          },
          requests: [request, handedTo],
        };
      });
      return handedTo;
    });
  }

  /**
   * One compare-and-set write built from the task as last read. While we hold the lease, others
   * may still write the task (a cancel request, a queued follow-on): adopt their version and build
   * the write again, as long as the lease is still ours.
   */
  private async write(
    build: Partial<TaskRecord> | ((current: TaskRecord) => Promise<{ patch: Partial<TaskRecord>; requests?: RequestRecord[] }>),
  ): Promise<TaskRecord> {
    for (let attempt = 0; ; attempt++) {
      const { patch, requests } = typeof build === 'function' ? await build(this.task) : { patch: build, requests: undefined };
      const now = new Date();
      const next: TaskRecord = { ...this.task, ...patch, updatedAt: now.toISOString() };
      for (const key of ['lease', 'queued'] as const) if (key in patch && patch[key] === undefined) delete next[key];
      if (!next.lease || next.lease.requestId !== this.request.requestId) delete next.cancelRequested;
      const expiresAt = expiryFrom(this.timing, now.getTime());
      if (expiresAt) next.expiresAt = expiresAt;
      try {
        this.task = await this.store.commit(this.task.tenantId, { task: next, expectedVersion: this.task.version, requests });
        return this.task;
      } catch (err) {
        if (!(err instanceof VersionConflictError) || attempt >= MAX_ADOPTIONS) {
          this.stopRenewal();
          throw err;
        }
        const fresh = await this.store.getTask(this.task.tenantId, this.task.taskId);
        if (!fresh || fresh.lease?.requestId !== this.request.requestId) {
          this.stopRenewal();
          throw err;
        }
        this.task = fresh;
        if (fresh.cancelRequested === this.request.requestId) this.onCancelRequested?.();
      }
    }
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
