import { Inject, Injectable, Optional } from '@nestjs/common';
import { TELEMETRY } from '../../app.tokens';
import type { Telemetry } from '../../telemetry/telemetry';

interface Entry {
  controller: AbortController;
  /** Settles once the request's outcome is persisted. */
  done: Promise<unknown>;
}

/**
 * The requests this process is running, so a cancel that arrives here can abort the model and its
 * tools at once. A cancel that arrives at another replica is passed through the task record instead
 * (`cancelRequested`), which the running process notices on its next lease renewal.
 */
@Injectable()
export class RunningRequestsService {
  private readonly entries = new Map<string, Entry>();

  constructor(@Optional() @Inject(TELEMETRY) telemetry?: Telemetry) {
    // Read when metrics are collected (`ta.requests.running`): nothing is spent per request.
    telemetry?.observeRunningRequests(() => this.entries.size);
  }

  register(requestId: string, controller: AbortController, done: Promise<unknown>): void {
    this.entries.set(requestId, { controller, done });
    done.finally(() => this.entries.delete(requestId)).catch(() => undefined);
  }

  /** How many run here (a replaced config's app waits for none: src/reload). */
  get size(): number {
    return this.entries.size;
  }

  has(requestId: string): boolean {
    return this.entries.has(requestId);
  }

  /** Settles once the outcome of request `requestId`, running here, is stored; undefined when it does not run here. */
  settledHere(requestId: string): Promise<unknown> | undefined {
    return this.entries.get(requestId)?.done;
  }

  /** Aborts a local request; resolves when its outcome is stored. False when it is not running here. */
  async cancel(requestId: string): Promise<boolean> {
    const e = this.entries.get(requestId);
    if (!e) return false;
    e.controller.abort(new Error('canceled by the user'));
    await e.done.catch(() => undefined);
    return true;
  }
}
