import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { RateLimitDefaults } from '../config/env.config';
import type { TokenUsage } from '../llm/llm-client.port';
import type { RateLimitKind, Telemetry } from '../telemetry/telemetry';
import { policyName, rateLimitHeaders } from './rate-limit-headers';
import { AdmissionQuery, LimitKind, RateLimitStore } from './rate-limit-store';

/** Every limit is per minute. */
export const RATE_LIMIT_PERIOD_MS = 60_000;
/** A held concurrency slot lapses this long after its replica stopped refreshing it (Redis). */
export const CONCURRENCY_SLOT_TTL_MS = 120_000;
const SLOT_REFRESH_MS = CONCURRENCY_SLOT_TTL_MS / 4;

const TELEMETRY_KIND: Record<LimitKind, RateLimitKind> = {
  caller_rpm: 'requests_per_caller',
  agent_rpm: 'requests_per_agent',
  caller_concurrency: 'concurrent_per_caller',
  caller_tpm: 'tokens_per_caller',
};

/** One agent's limits once `spec.limits` is laid over the TA_RATE_LIMIT_* defaults (0: none). */
export interface AgentLimits {
  callerRpm?: number;
  agentRpm?: number;
  callerConcurrency?: number;
  callerTpm?: number;
}

/** An admitted request: its headers, and the slot it holds until `release` (idempotent). */
export interface Admission {
  headers: Record<string, string>;
  release(): void;
}

/** `spec.limits` over the defaults; undefined when the agent has no limit at all. */
export function agentLimitsOf(agent: AgentDefinition, defaults: RateLimitDefaults): AgentLimits | undefined {
  const spec = agent.limits ?? {};
  const pick = (own: number | undefined, fallback: number | undefined) => {
    const v = own ?? fallback;
    return v ? v : undefined; // 0 in the YAML lifts the default
  };
  const limits: AgentLimits = {
    callerRpm: pick(spec.caller_rpm, defaults.callerRpm),
    agentRpm: pick(spec.agent_rpm, defaults.agentRpm),
    callerConcurrency: pick(spec.caller_concurrency, defaults.callerConcurrency),
    callerTpm: pick(spec.caller_tpm, defaults.callerTpm),
  };
  return Object.values(limits).some((v) => v !== undefined) ? limits : undefined;
}

/**
 * The rate limits of the agent routes (docs/configuration.md, "Rate limits"): requests per minute
 * per caller and per agent, concurrent requests per caller, model tokens per minute per caller.
 * An agent without limits costs nothing (`limitsOf` is a map lookup); one with limits costs one
 * store round trip to admit, one to release a concurrency slot, and one to charge tokens.
 */
export class RateLimiter {
  private readonly limits = new Map<AgentDefinition, AgentLimits>();
  private slotSeq = 0;
  private readonly slotPrefix = `${process.pid}-${Math.random().toString(36).slice(2, 10)}-`;

  constructor(
    private readonly store: RateLimitStore,
    agents: AgentDefinition[],
    defaults: RateLimitDefaults,
    private readonly telemetry: Telemetry,
    private readonly logger: Logger,
  ) {
    for (const agent of agents) {
      const limits = agentLimitsOf(agent, defaults);
      if (limits) this.limits.set(agent, limits);
    }
  }

  limitsOf(agent: AgentDefinition): AgentLimits | undefined {
    return this.limits.get(agent);
  }

  /**
   * Counts a request, or refuses it with 429 RATE_LIMITED (`Retry-After`, RateLimit headers) and
   * counts nothing. Undefined when the agent has no limits.
   */
  async admit(agent: AgentDefinition, principal: Principal): Promise<Admission | undefined> {
    const limits = this.limits.get(agent);
    if (!limits) return undefined;
    const caller = `${enc(agent.source)}:${enc(principal.tenantId)}:${enc(principal.ownerId)}`;
    const key = (kind: LimitKind, who: string) => this.store.key(`${policyName(kind)}:${who}`);
    const slot = limits.callerConcurrency ? `${this.slotPrefix}${++this.slotSeq}` : '';
    const query: AdmissionQuery = {
      periodMs: RATE_LIMIT_PERIOD_MS,
      callerRpm: limits.callerRpm ? { key: key('caller_rpm', caller), limit: limits.callerRpm } : undefined,
      agentRpm: limits.agentRpm ? { key: key('agent_rpm', enc(agent.source)), limit: limits.agentRpm } : undefined,
      callerConcurrency: limits.callerConcurrency
        ? { key: key('caller_concurrency', caller), limit: limits.callerConcurrency, slot, ttlMs: CONCURRENCY_SLOT_TTL_MS }
        : undefined,
      callerTpm: limits.callerTpm ? { key: key('caller_tpm', caller), limit: limits.callerTpm } : undefined,
    };
    const result = await this.store.admit(query);
    const windowSeconds = RATE_LIMIT_PERIOD_MS / 1000;
    if (result.refused) {
      const kind = result.refused;
      this.telemetry.recordRateLimited(TELEMETRY_KIND[kind]);
      const state = result.states.filter((s) => s.kind === kind);
      const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
      if (state[0]) state[0] = { ...state[0], remaining: 0, resetSeconds: retryAfter };
      throw new DomainError(
        ErrorCode.RATE_LIMITED,
        `Rate limit ${policyName(kind)} exceeded (${limitText(kind, state[0]?.limit ?? 0)}); retry after ${retryAfter} s`,
        {
          retryAfter,
          headers: rateLimitHeaders(state, windowSeconds),
        },
      );
    }
    return { headers: rateLimitHeaders(result.states, windowSeconds), release: this.holder(query) };
  }

  /**
   * Adds a run's model tokens to the caller's token window (nothing without a token limit), awaited
   * before the run answers, so the caller's next request already sees them. Never rejects: a store
   * failure only loses these tokens (logged).
   */
  async charge(agent: AgentDefinition, principal: Principal, usage: TokenUsage): Promise<void> {
    const limit = this.limits.get(agent)?.callerTpm;
    if (!limit || !usage.total_tokens) return;
    const key = this.store.key(`${policyName('caller_tpm')}:${enc(agent.source)}:${enc(principal.tenantId)}:${enc(principal.ownerId)}`);
    try {
      await this.store.charge({ key, limit }, RATE_LIMIT_PERIOD_MS, usage.total_tokens);
    } catch (err) {
      this.logger.warn({ err, agent: agent.source }, 'could not add tokens to the rate limit window');
    }
  }

  /** The release of an admitted request: gives its concurrency slot back once, and stops refreshing it. */
  private holder(query: AdmissionQuery): () => void {
    const c = query.callerConcurrency;
    if (!c) return () => undefined;
    const timer = setInterval(() => {
      this.store.refresh(c.key, c.slot, c.ttlMs).catch(() => undefined); // a lapse only frees the slot early
    }, SLOT_REFRESH_MS);
    timer.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(timer);
      this.store.release(c.key, c.slot).catch((err: unknown) => {
        // The slot lapses by itself (CONCURRENCY_SLOT_TTL_MS) if Redis missed the release.
        this.logger.warn({ err }, 'could not release a concurrency slot');
      });
    };
  }
}

function limitText(kind: LimitKind, limit: number): string {
  switch (kind) {
    case 'caller_rpm':
      return `${limit} requests per minute per caller`;
    case 'agent_rpm':
      return `${limit} requests per minute for this agent`;
    case 'caller_concurrency':
      return `${limit} running requests per caller`;
    case 'caller_tpm':
      return `${limit} model tokens per minute per caller`;
  }
}

/** Key parts are percent-encoded so an id containing `:` cannot collide with another caller. */
function enc(part: string): string {
  return encodeURIComponent(part);
}
