/**
 * The delay between two reads of the store while following a request that runs elsewhere: from
 * `minMs`, doubled after every read that brought nothing new, up to `maxMs`; back to `minMs` when
 * something arrived. A stream that waits long (a slow model, a pause) then costs a read per
 * `maxMs`, not ten a second.
 */
export class PollBackoff {
  private current: number;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {
    this.current = minMs;
  }

  /** The delay before the next read (and doubles the one after). */
  next(): number {
    const delay = this.current;
    this.current = Math.min(this.current * 2, this.maxMs);
    return delay;
  }

  reset(): void {
    this.current = this.minMs;
  }
}
