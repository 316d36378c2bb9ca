import type { Logger } from 'pino';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord } from '../../state/state.entities';
import { finish, Finished, renew } from '../lifecycle/finish';
import type { TaskAccess } from '../writer/task-access';
import { TaskWriterService } from '../writer/task-writer.service';

/**
 * The lease of a running request, from the replica that runs it: renewed every third of its length
 * while the work runs, and released (or handed to the waiting follow-on) by the final write. Both
 * go through the task writer as persistent writes: a store that stalls or restarts is waited out
 * with backoff, and renewal stops only when the task provably names another holder (LEASE_LOST),
 * which aborts the run's controller so the run stops: its result could no longer be stored. A cancel
 * another replica asks for through the task aborts it too.
 *
 * The controller comes with the constructor, not as callbacks set afterwards: in this Node (V8 13)
 * a closure stored into a field of an object after it was made keeps everything it reaches alive
 * through the young collections, so each turn's run was promoted to the old generation (issue 27,
 * docs/performance.md, What V8 promotes).
 */
export class HeldLease {
  private timer?: NodeJS.Timeout;
  private renewing = false;
  private stopped = false;

  constructor(
    private readonly writer: TaskWriterService,
    private readonly access: TaskAccess,
    readonly requestId: string,
    private readonly logger: Logger,
    /** Aborted when another replica asks to cancel the request, and when the lease is provably another request's. */
    private readonly controller: AbortController,
  ) {}

  start(): void {
    const every = Math.max(50, Math.floor(this.writer.timing.leaseMs / 3));
    this.timer = setInterval(() => void this.renewOnce(), every);
    this.timer.unref();
  }

  /** Stops renewing and writes the request's final record (see lifecycle `finish`). */
  async finish(final: RequestRecord, handOver = true): Promise<Finished> {
    this.stop();
    const persistent = { stopped: () => false };
    return (await this.writer.update(this.access, finish(final, this.writer.timing, handOver), { persistent })).result;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async renewOnce(): Promise<void> {
    // One renewal at a time: a renewal waiting out a stalled store covers the ticks it spans.
    if (this.renewing || this.stopped) return;
    this.renewing = true;
    try {
      const persistent = { stopped: () => this.stopped };
      const { result } = await this.writer.update(this.access, renew(this.requestId, this.writer.timing), { persistent });
      if (result.cancelRequested && !this.stopped) this.controller.abort(new Error('canceled by the user'));
    } catch (err) {
      if (this.stopped) return;
      if (err instanceof DomainError && err.code === ErrorCode.LEASE_LOST) {
        this.stop();
        this.logger.warn({ task_id: this.access.taskId, request_id: this.requestId }, 'lease lost to another request; stopping this one');
        this.controller.abort(err);
        return;
      }
      // The store stayed away past the persistent bound: keep the lease ticking (it may come back).
      this.logger.warn({ err, task_id: this.access.taskId, request_id: this.requestId }, 'lease renewal failed; retrying');
    } finally {
      this.renewing = false;
    }
  }
}
