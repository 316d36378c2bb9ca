import type { Logger } from 'pino';
import { StateStore } from '../state/state-store';
import { RequestRecord, TaskRecord } from '../state/state.entities';
import { VersionConflictError } from '../state/state.errors';

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
        this.write({ lease: { requestId: this.request.requestId, expiresAt: Date.now() + this.timing.leaseMs } }),
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

  /** Writes the request's final record and the task's new state, releasing the lease. */
  finish(taskPatch: Partial<TaskRecord>, request: RequestRecord): Promise<TaskRecord> {
    this.stopRenewal();
    return this.serialized(async () => {
      this.request = request;
      return this.write({ ...taskPatch, lease: undefined }, [request]);
    });
  }

  private async write(patch: Partial<TaskRecord>, requests?: RequestRecord[], retried = false): Promise<TaskRecord> {
    const now = new Date();
    const next: TaskRecord = { ...this.task, ...patch, updatedAt: now.toISOString() };
    if (patch.lease === undefined && 'lease' in patch) delete next.cancelRequested;
    const expiresAt = expiryFrom(this.timing, now.getTime());
    if (expiresAt) next.expiresAt = expiresAt;
    if (patch.lease === undefined && 'lease' in patch) delete next.lease;
    try {
      this.task = await this.store.commit(this.task.tenantId, { task: next, expectedVersion: this.task.version, requests });
      return this.task;
    } catch (err) {
      if (!(err instanceof VersionConflictError) || retried) {
        this.stopRenewal();
        throw err;
      }
      // Someone wrote the task while we hold its lease: only a cancel request may do that. Adopt
      // their version if the lease is still ours, honour the cancel, and write again.
      const fresh = await this.store.getTask(this.task.tenantId, this.task.taskId);
      if (!fresh || fresh.lease?.requestId !== this.request.requestId) {
        this.stopRenewal();
        throw err;
      }
      this.task = fresh;
      if (fresh.cancelRequested === this.request.requestId) this.onCancelRequested?.();
      return this.write(patch, requests, true);
    }
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
