import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig, ToolGovernanceOverride } from '../../agents/config/mcp-server.schema';
import { JsonSchema, RiskLevel, Tool, ToolContext, ToolOutput } from '../tool.port';
import type { McpConnection, McpToolInfo } from './mcp-connection';
import { idempotentFromAnnotations, riskFromAnnotations } from './mcp-risk';

/** `{server}-{tool}`, made to fit the model's rule for names (64 of A-Z a-z 0-9 _ -). */
export function mcpToolName(server: string, tool: string): string {
  return `${server}-${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/**
 * One tool of an MCP server. The risk comes from the tool's annotations, then the server's
 * `tool_governance_overrides` (keyed by the MCP tool name or by the name the model sees).
 * `trust_level` is not used: absent, upstream reads it as `untrusted`, and making that ask for
 * every tool would override CONFIG.md's risk-based policy. Each call carries the caller's identity
 * in `user_id_header` and, with `forward_token`, their token.
 */
export class McpTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly risk: RiskLevel;
  readonly requiresHitl?: boolean;
  readonly idempotent: boolean;
  readonly timeoutMs?: number;
  readonly source: string;

  constructor(
    private readonly connection: McpConnection,
    private readonly info: McpToolInfo,
  ) {
    const c = connection.config;
    this.name = mcpToolName(c.name, info.name);
    this.description = info.description ?? info.title ?? info.name;
    this.parameters = (info.inputSchema ?? { type: 'object', properties: {} }) as JsonSchema;
    const override = overrideFor(c, info.name, this.name);
    this.risk = override?.risk ?? riskFromAnnotations(info.annotations);
    this.requiresHitl = override?.requires_hitl;
    this.idempotent = idempotentFromAnnotations(info.annotations);
    this.timeoutMs = c.request_timeout ? c.request_timeout * 1000 : undefined;
    this.source = `mcp:${c.name}`;
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
    const result = await this.connection.callTool(this.info.name, args, { signal: ctx.signal, headers: callHeaders(this.connection.config, ctx) });
    return { content: resultText(result), isError: result.isError === true };
  }
}

function overrideFor(c: McpServerConfig, mcpName: string, modelName: string): ToolGovernanceOverride | undefined {
  const o = c.tool_governance_overrides;
  if (!o) return undefined;
  const get = (k: string) => (o instanceof Map ? o.get(k) : (o as Record<string, ToolGovernanceOverride>)[k]);
  return get(mcpName) ?? get(modelName);
}

/**
 * The caller's identity, from the authenticated principal (`user_id_source: auth`, the default) or
 * a fixed service identity from the environment (`env`), and the caller's tenant
 * (`tenant_id_header`): never from the model's arguments.
 */
export function callHeaders(c: McpServerConfig, ctx: ToolContext): Record<string, string> {
  const headers: Record<string, string> = {};
  if (c.user_id_header) {
    const id = c.user_id_source === 'env' ? process.env[c.user_id_env_var ?? ''] : ctx.principal.ownerId;
    if (id) headers[c.user_id_header] = id;
  }
  // The tenant always comes from the authenticated caller: an owner id is unique only within it.
  if (c.tenant_id_header && ctx.principal.tenantId) headers[c.tenant_id_header] = ctx.principal.tenantId;
  if (c.forward_token && ctx.bearerToken) headers.authorization = `Bearer ${ctx.bearerToken}`;
  return headers;
}

/** Text parts as they are; other parts as short markers; structured content as JSON when alone. */
export function resultText(r: CallToolResult): string {
  const parts = (r.content ?? []).map((c) => {
    switch (c.type) {
      case 'text':
        return c.text;
      case 'image':
      case 'audio':
        return `[${c.type}: ${c.mimeType}]`;
      case 'resource':
        return 'text' in c.resource && typeof c.resource.text === 'string' ? c.resource.text : `[resource: ${c.resource.uri}]`;
      case 'resource_link':
        return `[resource: ${c.uri}]`;
      default:
        return '';
    }
  });
  const text = parts.filter(Boolean).join('\n');
  if (!text && r.structuredContent !== undefined) return JSON.stringify(r.structuredContent);
  return text;
}
