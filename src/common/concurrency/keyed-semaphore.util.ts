/** Tasks in flight at once per key, by default (webhook attempts per receiver origin: docs/webhooks.md). */
export const DEFAULT_PER_KEY = 4;

/**
 * Bounds the tasks in flight per key, per process: webhook attempts per receiving origin
 * (`https://hooks.example.com:443`), so a receiver that is slow or down holds at most `perKey`
 * sockets and timers and a backlog drained after an outage reaches it `perKey` at a time; calls
 * per Python plugin host (its module), so a burst of tool calls does not start a thread each.
 * Waiters run in arrival order. Replicas each have their own bound.
 */
export class KeyedSemaphore {
  private readonly keys = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(private readonly perKey = DEFAULT_PER_KEY) {
    if (!Number.isInteger(perKey) || perKey < 1) throw new RangeError(`perKey must be an integer >= 1 (got ${perKey})`);
  }

  /** Runs `task` once fewer than `perKey` tasks of `key` run, and frees the slot when it settles. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    await this.acquire(key);
    try {
      return await task();
    } finally {
      this.release(key);
    }
  }

  /** Tasks of `key` running now (for tests and metrics). */
  inFlight(key: string): number {
    return this.keys.get(key)?.running ?? 0;
  }

  private acquire(key: string): Promise<void> {
    let slot = this.keys.get(key);
    if (!slot) this.keys.set(key, (slot = { running: 0, waiting: [] }));
    if (slot.running < this.perKey) {
      slot.running++;
      return Promise.resolve();
    }
    const queue = slot.waiting;
    return new Promise((resolve) => queue.push(resolve));
  }

  private release(key: string): void {
    const slot = this.keys.get(key)!;
    const next = slot.waiting.shift();
    // The slot passes straight to the next waiter, so a newcomer cannot overtake it.
    if (next) return next();
    if (--slot.running === 0) this.keys.delete(key);
  }
}
