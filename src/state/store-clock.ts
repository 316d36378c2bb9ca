/**
 * The store's clock as this process sees it: this process's clock plus an estimated offset, learnt
 * from the server time the store's answers carry (Redis `TIME`, DynamoDB's HTTP `Date` header).
 * Leases and expiry are judged by it, so replicas whose own clocks disagree still agree on when a
 * lease lapses (docs/api.md, "Leases and clocks").
 *
 * Each sample bounds the offset: the server read its clock between our send and our receipt, and a
 * clock shown at `resolutionMs` granularity (1 s for a `Date` header) reads up to that much below
 * the true time, so `server - receivedAt <= offset <= server + resolutionMs - sentAt`. Samples are
 * intersected (a quick round trip, or a second boundary caught, narrows the bound) and the estimate
 * is its middle: off by at most half the round trip plus half the resolution. Between samples the
 * bound widens by `driftPpm` of the time elapsed (the two clocks may run at slightly different
 * rates), so the truth stays inside it and a slow round trip under load never drags a good estimate
 * off. A sample that does not overlap the bound (either clock stepped) starts it afresh.
 *
 * Until the first sample the offset is 0 (this process's own clock).
 */
export class StoreClock {
  private lo?: number;
  private hi?: number;
  /** Local time the bound was last narrowed at. */
  private at = 0;
  private readonly resolutionMs: number;
  private readonly driftPpm: number;
  private readonly local: () => number;

  /** `driftPpm`: how fast the two clocks may drift apart (default 1000 ppm: 1 ms a second, a generous bound). */
  constructor(options: { resolutionMs: number; driftPpm?: number; local?: () => number }) {
    this.resolutionMs = options.resolutionMs;
    this.driftPpm = options.driftPpm ?? 1000;
    this.local = options.local ?? Date.now;
  }

  /** The store's current time (epoch ms), as best known here. */
  now(): number {
    return this.local() + this.offset();
  }

  /** Store time minus local time (ms): 0 until the first sample. */
  offset(): number {
    return this.lo === undefined || this.hi === undefined ? 0 : Math.round((this.lo + this.hi) / 2);
  }

  /** How far `now()` may be off the store's clock (ms); undefined until the first sample. */
  uncertainty(): number | undefined {
    return this.lo === undefined || this.hi === undefined ? undefined : (this.hi - this.lo) / 2;
  }

  /** A server time `serverMs` read during a call sent at `sentAt` and answered at `receivedAt` (local ms). */
  observe(serverMs: number, sentAt: number, receivedAt: number): void {
    // A local clock that stepped back mid-call (or a nonsense time) says nothing.
    if (!Number.isFinite(serverMs) || receivedAt < sentAt) return;
    const lo = serverMs - receivedAt;
    const hi = serverMs + this.resolutionMs - sentAt;
    if (this.lo === undefined || this.hi === undefined) return this.reset(lo, hi, receivedAt);
    const drift = (Math.max(0, receivedAt - this.at) * this.driftPpm) / 1e6;
    const [oldLo, oldHi] = [this.lo - drift, this.hi + drift];
    if (lo > oldHi || hi < oldLo) return this.reset(lo, hi, receivedAt);
    const [nextLo, nextHi] = [Math.max(oldLo, lo), Math.min(oldHi, hi)];
    // Only a narrower bound moves the clock on (and restarts the drift allowance).
    if (nextHi - nextLo < this.hi - this.lo + 2 * drift) this.reset(nextLo, nextHi, receivedAt);
  }

  private reset(lo: number, hi: number, at: number): void {
    this.lo = lo;
    this.hi = hi;
    this.at = at;
  }
}
