import { Injectable } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';

/**
 * Where this replica is in a graceful shutdown (src/common/shutdown/graceful-shutdown.ts): serving,
 * draining (no new work; running requests may finish), or past its grace (what still runs is
 * failed as `shutdown`). Read by readiness, the draining middleware, the request runner (a request
 * that ends while draining releases its task's lease instead of running the waiting follow-on
 * here) and the request watcher (it stops taking queued requests over).
 */
@Injectable()
export class ShutdownStateService {
  private drainingSince?: number;
  private readonly overdue = new AbortController();
  private inFlight = 0;
  /** v3 runs among them: their outcomes must be stored for the drain to count as clean. */
  private running = 0;
  private idleWaiters: (() => void)[] = [];

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  /** Aborted (with a SHUTTING_DOWN error) when the grace ends. */
  get graceOver(): AbortSignal {
    return this.overdue.signal;
  }

  startDraining(): void {
    this.drainingSince ??= Date.now();
  }

  endGrace(): void {
    this.startDraining();
    this.overdue.abort(shuttingDown('The server shut down before this request finished'));
  }

  /**
   * Counts one piece of work (an HTTP request until its response closes, a v3 request until its
   * outcome is stored) until `release` is called; the drain waits for none to be left. Shared by
   * every app a config reload builds, so it sees all of the process's work.
   */
  enter(kind: 'http' | 'run' = 'http'): () => void {
    this.inFlight++;
    if (kind === 'run') this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (kind === 'run') this.running--;
      if (--this.inFlight === 0) for (const w of this.idleWaiters.splice(0)) w();
    };
  }

  /** HTTP requests and v3 runs in flight. */
  get busy(): number {
    return this.inFlight;
  }

  /** v3 runs whose outcome is not stored yet. */
  get runs(): number {
    return this.running;
  }

  /** Resolves when no work is in flight. */
  idle(): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

export function shuttingDown(message: string): DomainError {
  return new DomainError(ErrorCode.SHUTTING_DOWN, message, { retryAfter: 1 });
}

export function isShutdownError(err: unknown): err is DomainError {
  return err instanceof DomainError && err.code === ErrorCode.SHUTTING_DOWN;
}
