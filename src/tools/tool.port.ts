import type { RiskLevel } from '../agents/config/governance.schema';
import type { Principal } from '../auth/principal';

export type { RiskLevel };

/** A JSON schema of a tool's arguments: always an object schema at the top. */
export type JsonSchema = Record<string, unknown>;

/** Who is calling, and how to stop: what every tool receives besides its arguments. */
export interface ToolContext {
  /** Aborted when the call times out or the request is canceled. A tool should stop promptly. */
  signal: AbortSignal;
  /** The authenticated caller (tenant and owner); never anything the model chose. */
  principal: Principal;
  /** The caller's raw bearer token; given only to tools configured to receive it (`forward_token`). */
  bearerToken?: string;
  /** Adds an item to the answer's `extra_data` (upstream's `extra_data_collector.add_extra_data`); given to plugins. */
  extraData?: (key: string, value: string) => void;
}

/** What a tool answers. `isError` results are shown to the model as errors, never retried. */
export interface ToolOutput {
  content: string;
  isError?: boolean;
  /** Items for the answer's `extra_data` (upstream's `extra_data_collector`: a Python plugin's, or a TypeScript plugin's `ctx.extraData`). */
  extraData?: ExtraDataItem[];
}

/** One item of upstream's ExtraData (`{key, value}`, both strings). */
export interface ExtraDataItem {
  key: string;
  value: string;
}

/**
 * One tool as the agent loop sees it, whatever it comes from (a TypeScript plugin, an OpenAPI
 * operation, an MCP server). The loop validates the arguments against `parameters` before calling
 * `execute`, applies the timeout, retries transient failures and turns every failure into an
 * error result for the model.
 */
export interface Tool {
  /** The name sent to the model: `plugin-function`, `{remote plugin}-{operationId}` or `{server}-{tool}`. */
  readonly name: string;
  readonly description: string;
  /** JSON schema of the arguments object. */
  readonly parameters: JsonSchema;
  readonly risk: RiskLevel;
  /** Always ask a human before running it (used by the approval flow). */
  readonly requiresHitl?: boolean;
  /**
   * Calling it twice with the same arguments does no more harm than once. Only such tools are
   * retried after a timeout or a connection reset, when the first attempt may have done its work.
   */
  readonly idempotent?: boolean;
  /** Per-call timeout in ms, when the tool's source sets one (else the server default). */
  readonly timeoutMs?: number;
  /** Where it comes from, for logs and traces (`plugin:Weather`, `mcp:todo`, `openapi:api_weather`). */
  readonly source: string;
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput | string>;
}

/** OpenAI's rule for function names. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
