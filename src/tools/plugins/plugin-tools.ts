import { RISK_LEVELS } from '../../agents/config/governance.schema';
import { compileArgsValidator } from '../args-validator';
import { ExtraDataItem, JsonSchema, Tool, TOOL_NAME, ToolContext, ToolOutput } from '../tool.port';
import type { PluginDefinition, PluginToolDefinition } from './plugin.types';

const PLUGIN_NAME = /^[A-Za-z0-9_]+$/;
const NO_ARGS: JsonSchema = { type: 'object', properties: {}, additionalProperties: false };

/** The problems of a plugin definition loaded from `file` (empty when it is usable). */
export function checkPlugin(p: PluginDefinition): string[] {
  const problems: string[] = [];
  if (!PLUGIN_NAME.test(p.name)) problems.push(`plugin name "${p.name}" must be letters, digits and "_"`);
  if (!Array.isArray(p.tools)) return [...problems, `plugin ${p.name}: tools must be an array`];
  const seen = new Set<string>();
  p.tools.forEach((t, i) => {
    const where = `plugin ${p.name} tools[${i}]${typeof t?.name === 'string' ? ` (${t.name})` : ''}`;
    if (typeof t?.name !== 'string' || !TOOL_NAME.test(`${p.name}-${t.name}`)) {
      problems.push(`${where}: name must make "${p.name}-<name>" at most 64 letters, digits, "_" or "-"`);
    } else if (seen.has(t.name)) problems.push(`${where}: duplicate tool name`);
    else seen.add(t.name);
    if (typeof t?.description !== 'string' || !t.description.trim()) problems.push(`${where}: description is required`);
    if (typeof t?.handler !== 'function') problems.push(`${where}: handler must be a function`);
    if (t?.risk !== undefined && !RISK_LEVELS.includes(t.risk)) problems.push(`${where}: risk must be one of ${RISK_LEVELS.join(', ')}`);
    if (t?.parameters !== undefined) {
      if (t.parameters === null || typeof t.parameters !== 'object' || t.parameters.type !== 'object') {
        problems.push(`${where}: parameters must be a JSON schema with type "object"`);
      } else {
        try {
          compileArgsValidator(t.parameters);
        } catch (e) {
          problems.push(`${where}: parameters is not a valid JSON schema: ${(e as Error).message}`);
        }
      }
    }
  });
  return problems;
}

/** The tools of a (checked) plugin, named `{plugin}-{function}` as upstream. */
export function pluginTools(p: PluginDefinition): Tool[] {
  return p.tools.map((t) => new PluginTool(p, t));
}

class PluginTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly risk: Tool['risk'];
  readonly requiresHitl?: boolean;
  readonly idempotent?: boolean;
  readonly timeoutMs?: number;
  readonly source: string;

  constructor(
    private readonly plugin: PluginDefinition,
    private readonly def: PluginToolDefinition,
  ) {
    this.name = `${plugin.name}-${def.name}`;
    this.description = def.description;
    this.parameters = def.parameters ?? NO_ARGS;
    this.risk = def.risk ?? 'write_high_risk';
    this.requiresHitl = def.requires_hitl;
    this.idempotent = def.idempotent;
    this.timeoutMs = def.timeout_ms;
    this.source = `plugin:${plugin.name}`;
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
    const extraData: ExtraDataItem[] = [];
    const own: ToolContext = {
      signal: ctx.signal,
      principal: ctx.principal,
      extraData: (key, value) => void extraData.push({ key: String(key), value: String(value) }),
    };
    if (this.plugin.forward_token && ctx.bearerToken) own.bearerToken = ctx.bearerToken;
    const value = await this.def.handler(args, own);
    const content = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
    return extraData.length ? { content, extraData } : { content };
  }
}
