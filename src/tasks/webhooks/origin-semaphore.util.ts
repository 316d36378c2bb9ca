/** Attempts in flight to one receiver origin at once, per replica (docs/webhooks.md). */
export const DEFAULT_PER_ORIGIN = 4;

/**
 * Bounds the attempts in flight per origin (`https://hooks.example.com:443`): a receiver that is
 * slow or down holds at most `perOrigin` sockets and timers of this replica, and a backlog drained
 * at once after an outage reaches it `perOrigin` at a time instead of all together. Waiters run in
 * arrival order. Per process: replicas each have their own bound.
 */
export class OriginSemaphore {
  private readonly origins = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(private readonly perOrigin = DEFAULT_PER_ORIGIN) {
    if (!Number.isInteger(perOrigin) || perOrigin < 1) throw new RangeError(`perOrigin must be an integer >= 1 (got ${perOrigin})`);
  }

  /** Runs `task` once fewer than `perOrigin` tasks of `origin` run, and frees the slot when it settles. */
  async run<T>(origin: string, task: () => Promise<T>): Promise<T> {
    await this.acquire(origin);
    try {
      return await task();
    } finally {
      this.release(origin);
    }
  }

  /** Tasks of `origin` running now (for tests and metrics). */
  inFlight(origin: string): number {
    return this.origins.get(origin)?.running ?? 0;
  }

  private acquire(origin: string): Promise<void> {
    let slot = this.origins.get(origin);
    if (!slot) this.origins.set(origin, (slot = { running: 0, waiting: [] }));
    if (slot.running < this.perOrigin) {
      slot.running++;
      return Promise.resolve();
    }
    const queue = slot.waiting;
    return new Promise((resolve) => queue.push(resolve));
  }

  private release(origin: string): void {
    const slot = this.origins.get(origin)!;
    const next = slot.waiting.shift();
    // The slot passes straight to the next waiter, so a newcomer cannot overtake it.
    if (next) return next();
    if (--slot.running === 0) this.origins.delete(origin);
  }
}
