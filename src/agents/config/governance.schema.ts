import { IsBoolean, IsIn, IsInt, IsOptional, Min } from 'class-validator';
import { RecordOf } from './validators';

export const RISK_LEVELS = ['read_only', 'write_low_risk', 'write_high_risk'] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

export const AUTONOMY_LEVELS = ['L0', 'L1', 'L2', 'L3'] as const;
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];

export class ToolPolicy {
  @IsOptional() @IsIn(RISK_LEVELS) risk?: RiskLevel;
  @IsOptional() @IsBoolean() requires_hitl?: boolean;
}

/** `spec.governance` (our extension, CONFIG.md). */
export class GovernanceConfig {
  @IsOptional() @IsIn(AUTONOMY_LEVELS) autonomy_level: AutonomyLevel = 'L1';
  @IsOptional() @IsInt() @Min(1) plan_threshold = 3;
  /** Per-tool policy keyed by the tool name sent to the model (`plugin-function`). */
  @IsOptional() @RecordOf(ToolPolicy)
  tools?: Map<string, ToolPolicy>;
}

/** `spec.concurrency` (our extension, CONFIG.md). */
export class ConcurrencyConfig {
  @IsOptional() @IsIn(['reject', 'enqueue']) on_busy: 'reject' | 'enqueue' = 'reject';
}
