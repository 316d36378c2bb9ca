/**
 * Callback-fed values as an async iterable, for turning a followed event log (callbacks) into the
 * async generator the A2A SDK's transport consumes. Ends when `end` is called, or throws `end(err)`.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake?: () => void;
  private done = false;
  private error: unknown;

  push(...values: T[]): void {
    this.items.push(...values);
    this.wake?.();
  }

  end(error?: unknown): void {
    this.done = true;
    this.error = error;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.items.length) yield this.items.shift()!;
      if (this.done) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
