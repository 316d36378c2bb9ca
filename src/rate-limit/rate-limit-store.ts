/** What a limit counts (its name in the RateLimit headers is the kebab-case form). */
export const LIMIT_KINDS = ['caller_rpm', 'agent_rpm', 'caller_concurrency', 'caller_tpm'] as const;
export type LimitKind = (typeof LIMIT_KINDS)[number];

/** One window limit to check: its store key and units per minute. */
export interface WindowLimit {
  key: string;
  limit: number;
}

/** The limits of one request (only those set); the store checks them all, atomically. */
export interface AdmissionQuery {
  periodMs: number;
  callerRpm?: WindowLimit;
  agentRpm?: WindowLimit;
  /** Held while the request runs, under `slot` (unique per request), until `release`. */
  callerConcurrency?: WindowLimit & { slot: string; ttlMs: number };
  /** Checked for room only; the tokens are added by `charge` when the model reports them. */
  callerTpm?: WindowLimit;
}

/** The state of one limit after a decision, for the `RateLimit` header. */
export interface LimitState {
  kind: LimitKind;
  limit: number;
  remaining: number;
  /** Seconds until the limit is wholly available again (concurrency: 0). */
  resetSeconds: number;
}

export interface AdmissionResult {
  /** The first limit (in LIMIT_KINDS order) that refused; then nothing was counted. */
  refused?: LimitKind;
  /** Refused: ms until a retry may be admitted. */
  retryAfterMs: number;
  /** Every checked limit, in LIMIT_KINDS order. */
  states: LimitState[];
}

/**
 * Where the windows live: memory (one replica) or Redis (shared by every replica on it). Every call
 * is one round trip at most; `admit` counts a request in every window or, refused, in none.
 */
export interface RateLimitStore {
  /** The store key of a limiter key (`caller-rpm:<agent>:<tenant>:<owner>`). */
  key(local: string): string;
  admit(query: AdmissionQuery): Promise<AdmissionResult>;
  /** Adds model tokens to a caller's token window (may overshoot it: gcra.ts). */
  charge(limit: WindowLimit, periodMs: number, tokens: number): Promise<void>;
  /** Gives a concurrency slot back. */
  release(key: string, slot: string): Promise<void>;
  /** Keeps a held slot from expiring (a replica that dies stops refreshing; its slots lapse). */
  refresh(key: string, slot: string, ttlMs: number): Promise<void>;
}
