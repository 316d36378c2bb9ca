import { Type } from 'class-transformer';
import {
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Max,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { McpServerConfig } from './mcp-server.schema';

export const REASONING_EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;

/**
 * `spec.agent` (and each `spec.agents[]` of a Sequential v1 config). Unknown keys here are an error:
 * a typo such as `temprature` must not pass silently (CONFIG.md).
 */
export class AgentSpecConfig {
  @IsString() @MinLength(1) name!: string;
  /** Free text used by upstream demos; kept for compatibility, not sent to the model. */
  @IsOptional() @IsString() role?: string;
  @IsString() @MinLength(1) model!: string;
  @IsOptional() @IsString() system_prompt?: string;
  /** 0 is a real value and is sent to the provider (upstream dropped it). */
  @IsOptional() @IsNumber() @Min(0) @Max(2) temperature?: number;
  @IsOptional() @IsInt() @Min(1) max_tokens?: number;
  @IsOptional() @IsIn(REASONING_EFFORTS) reasoning_effort?: (typeof REASONING_EFFORTS)[number];
  @IsOptional() @IsArray() @IsString({ each: true }) plugins?: string[];
  @IsOptional() @IsArray() @IsString({ each: true }) remote_plugins?: string[];
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => McpServerConfig) mcp_servers?: McpServerConfig[];
  /** Ours: ends a runaway tool loop with a clear error. */
  @IsOptional() @IsInt() @Min(1) max_tool_rounds = 10;
}

/** One step of a `kind: Sequential` v1 agent. `instructions` is a template over the input fields. */
export class SequentialTaskConfig {
  @IsString() @MinLength(1) name!: string;
  @IsInt() @Min(0) task_no!: number;
  @IsOptional() @IsString() description?: string;
  @IsString() instructions!: string;
  @IsString() agent!: string;
}
