import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolInfo } from '../mcp/mcp-connection';
import { resultText } from '../mcp/mcp-tool';
import type { ExtraDataItem, JsonSchema, RiskLevel, Tool, ToolContext, ToolOutput } from '../tool.port';

/** Calls a tool of the host with the request's `_meta` (the plugin host's `call`). */
export type PythonToolCaller = (tool: string, args: Record<string, unknown>, meta: Record<string, unknown>, signal: AbortSignal) => Promise<CallToolResult>;

/**
 * One `@kernel_function` of an upstream Python plugin class, served by its module's plugin host.
 * Named as upstream names it (`{Plugin}-{function}`, the key of `requires_hitl` in the plugin
 * catalog and of `spec.governance.tools`), with the same defaults as a TypeScript plugin's tool:
 * `write_high_risk`, not idempotent (never retried after a timeout or a crash, when it may have
 * done its work). Each call carries the caller's `Authorization` header in `_meta.authorization`,
 * as upstream hands it to `PluginClass(authorization, extra_data_collector)`; what the plugin put
 * in its collector comes back as the output's extra data.
 */
export class PythonPluginTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly risk: RiskLevel = 'write_high_risk';
  readonly idempotent = false;
  readonly source: string;

  constructor(
    private readonly callTool: PythonToolCaller,
    className: string,
    private readonly info: McpToolInfo,
  ) {
    this.name = info.name;
    this.description = info.description ?? info.name;
    this.parameters = (info.inputSchema ?? { type: 'object', properties: {} }) as JsonSchema;
    this.source = `python:${className}`;
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
    const meta: Record<string, unknown> = ctx.bearerToken ? { authorization: `Bearer ${ctx.bearerToken}` } : {};
    const result = await this.callTool(this.info.name, args, meta, ctx.signal);
    const extra = extraDataOf(result._meta);
    return { content: resultText(result), isError: result.isError === true, ...(extra.length ? { extraData: extra } : {}) };
  }
}

/** `_meta.extra_data` (upstream's ExtraData: `{items: [{key, value}]}`); anything else is ignored. */
function extraDataOf(meta: unknown): ExtraDataItem[] {
  const items = (meta as { extra_data?: { items?: unknown } } | undefined)?.extra_data?.items;
  if (!Array.isArray(items)) return [];
  return items
    .filter((i): i is { key: unknown; value: unknown } => typeof i === 'object' && i !== null)
    .map((i) => ({ key: String(i.key), value: typeof i.value === 'string' ? i.value : JSON.stringify(i.value) }));
}
