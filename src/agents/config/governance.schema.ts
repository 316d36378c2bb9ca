import { Defaulted, IsBool, IsIntFrom, IsOneOf, Optional } from './field-validators';
import { RecordOf } from './validators';

export const RISK_LEVELS = ['read_only', 'write_low_risk', 'write_high_risk'] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

export const AUTONOMY_LEVELS = ['L0', 'L1', 'L2', 'L3'] as const;
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];

/** `spec.governance.tools.<tool name>`: overrides what the catalog, the plugin or MCP annotations say. */
export class ToolPolicy {
  @Optional() @IsOneOf(RISK_LEVELS) risk?: RiskLevel;
  /** true: always ask a human, whatever the autonomy level. */
  @Optional() @IsBool() requires_hitl?: boolean;
}

/**
 * `spec.governance` (our extension, CONFIG.md). L0 approves nothing automatically; L1 runs read-only
 * tools; L2 also low-risk writes; L3 everything. A tool with no declared risk is write_high_risk.
 */
export class GovernanceConfig {
  @Defaulted() @IsOneOf(AUTONOMY_LEVELS) autonomy_level: AutonomyLevel = 'L1';
  /** A model turn asking for at least this many tool calls is approved or rejected as one plan. */
  @Defaulted() @IsIntFrom(1) plan_threshold = 3;
  /**
   * A new message sent while a pause waits: `reject` (409 TASK_PAUSED: decide or cancel first, as
   * upstream), or `refine` (the waiting calls are rejected as `refined` with the message's text, the
   * message is added, and the model plans again in the same request: src/tasks/lifecycle/refine.ts).
   */
  @Defaulted() @IsOneOf(['reject', 'refine']) on_paused: 'reject' | 'refine' = 'reject';
  /** A pause not decided within this many seconds ends Canceled as `expired` (default: pauses wait forever). */
  @Optional() @IsIntFrom(1) approval_ttl_seconds?: number;
  /** Per-tool policy keyed by the tool name sent to the model (`plugin-function`). */
  @Optional()
  @RecordOf(ToolPolicy)
  tools?: Map<string, ToolPolicy>;
}

/** `spec.concurrency` (our extension, CONFIG.md): what a follow-on does while its task is busy. */
export class ConcurrencyConfig {
  @Defaulted() @IsOneOf(['reject', 'enqueue']) on_busy: 'reject' | 'enqueue' = 'reject';
}
