import { Type } from 'class-transformer';
import { ValidateNested } from '../../common/validation/class-validator-parts';
import { Defaulted, IsIntFrom, IsListOfMappings, IsMapping, IsNonEmptyText, IsNumberFrom, IsOneOf, IsText, IsTextList, Optional } from './field-validators';
import { HistoryConfig } from './history.schema';
import { McpServerConfig } from './mcp-server.schema';

export const REASONING_EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;

/**
 * `spec.agent` (and each `spec.agents[]` of a Sequential v1 config): upstream `AgentConfig` plus
 * our `max_tool_rounds`. Unknown keys here are an error: a typo such as `temprature` must not pass
 * silently (CONFIG.md). A key given with no value (`temperature:`) means "not set", as upstream.
 */
export class AgentSpecConfig {
  @IsNonEmptyText() name!: string;
  /** Free text used by upstream demos; kept for compatibility, not sent to the model. */
  @Optional() @IsText() role?: string;
  /** A provider model name (`gpt-4o`, an Azure deployment) or a built-in `local/...` model. */
  @IsNonEmptyText() model!: string;
  @Optional() @IsText() system_prompt?: string;
  /** 0 to 2 (the OpenAI range; upstream capped at 1). 0 is a real value and is sent (upstream dropped it). */
  @Optional() @IsNumberFrom(0, 2) temperature?: number;
  @Optional() @IsIntFrom(1) max_tokens?: number;
  /** Sent to reasoning models only; upstream applied it to `gpt-5*` names and forced unknown values to "low". */
  @Optional() @IsOneOf(REASONING_EFFORTS) reasoning_effort?: (typeof REASONING_EFFORTS)[number];
  /** Local plugin names (TypeScript/JavaScript plugins, or the demos' built-in ones). */
  @Optional() @IsTextList() plugins?: string[];
  /** Names in the remote (OpenAPI) plugin catalog. */
  @Optional() @IsTextList() remote_plugins?: string[];
  @Optional() @IsListOfMappings() @ValidateNested({ each: true }) @Type(() => McpServerConfig) mcp_servers?: McpServerConfig[];
  /** Ours: the tool loop stops with a clear error after this many model turns that ask for tools. */
  @Defaulted() @IsIntFrom(1) max_tool_rounds = 10;
  /** Ours: what the model receives of a long conversation (src/invocation/history-window.ts). Default: everything. */
  @Optional() @IsMapping() @ValidateNested() @Type(() => HistoryConfig) history?: HistoryConfig;
}

/** One step of a `kind: Sequential` v1 agent. `instructions` is a template over the input fields. */
export class SequentialTaskConfig {
  @IsNonEmptyText() name!: string;
  @IsIntFrom(0) task_no!: number;
  @Optional() @IsText() description?: string;
  @IsText() instructions!: string;
  /** The `name` of one of `spec.agents`. */
  @IsNonEmptyText() agent!: string;
}
