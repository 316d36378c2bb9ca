import { EPSILON_MS } from './gcra';
import { RATE_LIMIT_ADMIT_LUA, RATE_LIMIT_CHARGE_LUA, RATE_LIMIT_SLOT_LUA } from './rate-limit.lua';
import { AdmissionQuery, AdmissionResult, LIMIT_KINDS, LimitKind, LimitState, RateLimitStore, WindowLimit } from './rate-limit-store';

/** What the limiter needs of the Redis state store: its connection, through scripts, and its key prefix. */
export interface ScriptRunner {
  readonly keyPrefix: string;
  runScript(lua: string, keys: string[], args: (string | number)[]): Promise<unknown>;
}

export function isScriptRunner(store: object): store is ScriptRunner {
  return typeof (store as Partial<ScriptRunner>).runScript === 'function' && typeof (store as Partial<ScriptRunner>).keyPrefix === 'string';
}

/**
 * The windows in Redis, shared by every replica on it (TA_STATE_STORE=redis), on the state store's
 * own connection: one script (rate-limit.lua.ts) per admission, so one round trip decides all the
 * limits of a request. Keys are `{prefix}{ratelimit}:<kind>:...`: one Redis Cluster hash tag, so the
 * script may touch a caller's and the agent's windows together.
 */
export class RedisRateLimitStore implements RateLimitStore {
  constructor(private readonly redis: ScriptRunner) {}

  /** The full key of a limiter key (`caller-rpm:...`). */
  key(local: string): string {
    return `${this.redis.keyPrefix}{ratelimit}:${local}`;
  }

  async admit(q: AdmissionQuery): Promise<AdmissionResult> {
    const limits = [q.callerRpm, q.agentRpm, q.callerConcurrency, q.callerTpm];
    // An unused limit still needs a key (KEYS has a fixed shape); the first used one stands in.
    const filler = limits.find((l) => l)?.key ?? this.key('none');
    const keys = limits.map((l) => l?.key ?? filler);
    const args = [q.periodMs, ...limits.map((l) => l?.limit ?? 0), q.callerConcurrency?.slot ?? '', q.callerConcurrency?.ttlMs ?? 0, EPSILON_MS];
    const reply = (await this.redis.runScript(RATE_LIMIT_ADMIT_LUA, keys, args)) as number[];
    const states: LimitState[] = [];
    limits.forEach((l, i) => {
      if (!l) return;
      states.push({
        kind: LIMIT_KINDS[i],
        limit: l.limit,
        remaining: Number(reply[2 + 2 * i]),
        resetSeconds: Math.ceil(Math.max(0, Number(reply[3 + 2 * i])) / 1000),
      });
    });
    const refused = Number(reply[0]);
    return { refused: refused ? (LIMIT_KINDS[refused - 1] as LimitKind) : undefined, retryAfterMs: Number(reply[1]), states };
  }

  async charge(limit: WindowLimit, periodMs: number, tokens: number): Promise<void> {
    await this.redis.runScript(RATE_LIMIT_CHARGE_LUA, [limit.key], [periodMs, limit.limit, tokens]);
  }

  async release(key: string, slot: string): Promise<void> {
    await this.redis.runScript(RATE_LIMIT_SLOT_LUA, [key], ['release', slot]);
  }

  async refresh(key: string, slot: string, ttlMs: number): Promise<void> {
    await this.redis.runScript(RATE_LIMIT_SLOT_LUA, [key], ['refresh', slot, ttlMs]);
  }
}
