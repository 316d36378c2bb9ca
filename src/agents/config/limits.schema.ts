import { IsIntFrom, Optional } from './field-validators';

/**
 * `spec.limits` (ours, CONFIG.md): this agent's rate limits (src/rate-limit). Each field overrides
 * its `TA_RATE_LIMIT_*` default; 0 lifts the default for this agent; unset keeps the default. A
 * caller is the pair (tenant, owner) of the token, counted per agent.
 */
export class LimitsConfig {
  /** Requests per minute of one caller (TA_RATE_LIMIT_CALLER_RPM). */
  @Optional() @IsIntFrom(0) caller_rpm?: number;
  /** Requests per minute of all callers together (TA_RATE_LIMIT_AGENT_RPM). */
  @Optional() @IsIntFrom(0) agent_rpm?: number;
  /** Requests of one caller running at once (TA_RATE_LIMIT_CALLER_CONCURRENCY). */
  @Optional() @IsIntFrom(0) caller_concurrency?: number;
  /** Model tokens (prompt + completion) per minute of one caller (TA_RATE_LIMIT_CALLER_TPM). */
  @Optional() @IsIntFrom(0) caller_tpm?: number;
}
