import { gcraCharge, gcraHasRoom, gcraSpend, GcraDecision } from './gcra';
import { AdmissionQuery, AdmissionResult, LimitKind, LimitState, RateLimitStore, WindowLimit } from './rate-limit-store';

/** Bound on the windows kept (callers × agents); past it the expired go first, then the oldest. */
export const MEMORY_RATE_LIMIT_MAX_KEYS = 100_000;

/**
 * The windows of one replica (TA_STATE_STORE=memory). Bounded: a window whose `tat` has passed
 * holds no information (a fresh one is the same) and is dropped when room is needed; when all are
 * live the oldest-written tenth is dropped, which can only admit more, never refuse wrongly.
 * Concurrency counts live while a request runs and are removed at zero.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly windows = new Map<string, number>();
  private readonly running = new Map<string, Set<string>>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MEMORY_RATE_LIMIT_MAX_KEYS,
  ) {}

  key(local: string): string {
    return local;
  }

  async admit(q: AdmissionQuery): Promise<AdmissionResult> {
    const now = this.now();
    const states: LimitState[] = [];
    const writes: [string, number][] = [];
    let refused: LimitKind | undefined;
    let retryAfterMs = 0;
    const window = (kind: LimitKind, w: WindowLimit | undefined, decide: (tat: number | undefined) => GcraDecision) => {
      if (!w) return;
      const d = decide(this.windows.get(w.key));
      states.push({ kind, limit: w.limit, remaining: d.remaining, resetSeconds: Math.ceil(Math.max(0, d.waitMs) / 1000) });
      if (!d.admitted && !refused) {
        refused = kind;
        retryAfterMs = d.waitMs;
      }
      if (d.admitted) writes.push([w.key, d.tat]);
    };
    window('caller_rpm', q.callerRpm, (tat) => gcraSpend(tat, now, q.callerRpm!.limit, q.periodMs));
    window('agent_rpm', q.agentRpm, (tat) => gcraSpend(tat, now, q.agentRpm!.limit, q.periodMs));
    const c = q.callerConcurrency;
    if (c) {
      const held = this.running.get(c.key)?.size ?? 0;
      const full = held >= c.limit;
      states.push({ kind: 'caller_concurrency', limit: c.limit, remaining: Math.max(0, c.limit - held - (full ? 0 : 1)), resetSeconds: 0 });
      if (full && !refused) {
        refused = 'caller_concurrency';
        retryAfterMs = 1000;
      }
    }
    window('caller_tpm', q.callerTpm, (tat) => gcraHasRoom(tat, now, q.callerTpm!.limit, q.periodMs));
    if (!refused) {
      for (const [key, tat] of writes) this.write(key, tat, now);
      if (c) {
        const slots = this.running.get(c.key) ?? new Set<string>();
        slots.add(c.slot);
        this.running.set(c.key, slots);
      }
    }
    return { refused, retryAfterMs, states };
  }

  async charge(limit: WindowLimit, periodMs: number, tokens: number): Promise<void> {
    const now = this.now();
    this.write(limit.key, gcraCharge(this.windows.get(limit.key), now, limit.limit, periodMs, tokens), now);
  }

  async release(key: string, slot: string): Promise<void> {
    const slots = this.running.get(key);
    if (!slots) return;
    slots.delete(slot);
    if (slots.size === 0) this.running.delete(key);
  }

  async refresh(): Promise<void> {
    // A replica's own memory cannot outlive it: nothing expires here.
  }

  /** Windows currently kept (tests). */
  get size(): number {
    return this.windows.size;
  }

  private write(key: string, tat: number, now: number): void {
    this.windows.delete(key); // re-inserted last: Map order is then oldest-written first
    if (this.windows.size >= this.maxKeys) this.evict(now);
    this.windows.set(key, tat);
  }

  private evict(now: number): void {
    for (const [key, tat] of this.windows) if (tat <= now) this.windows.delete(key);
    // All live: drop the oldest tenth at once, so a full map is not swept on every write.
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxKeys * 0.9) break;
      this.windows.delete(key);
    }
  }
}
