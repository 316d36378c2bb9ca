import { readFileSync } from 'node:fs';
import { RISK_LEVELS, type ToolPolicy } from '../agents/config/governance.schema';

/**
 * Upstream's plugin catalog JSON (`TA_PLUGIN_CATALOG_FILE`, teal-agents.md §3.7): governance per
 * `tool_id` (`plugin-function`). We read `governance.requires_hitl`, and our optional
 * `governance.risk`; the other fields (cost, data_sensitivity, auth) are accepted and ignored.
 */
export function loadPluginCatalog(file: string): { policies: Map<string, ToolPolicy>; problems: string[] } {
  const policies = new Map<string, ToolPolicy>();
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    return { policies, problems: [`${file}: cannot read the plugin catalog: ${(err as Error).message}`] };
  }
  const plugins = (raw as { plugins?: unknown } | null)?.plugins;
  if (!Array.isArray(plugins)) return { policies, problems: [`${file}: plugins must be a list`] };
  const problems: string[] = [];
  plugins.forEach((p: { tools?: unknown } | null, i) => {
    if (!Array.isArray(p?.tools)) return;
    p.tools.forEach((t: { tool_id?: unknown; governance?: { requires_hitl?: unknown; risk?: unknown } } | null, j: number) => {
      if (typeof t?.tool_id !== 'string') return;
      const g = t.governance ?? {};
      if (g.risk !== undefined && !RISK_LEVELS.includes(g.risk as never)) {
        problems.push(`${file}: plugins[${i}].tools[${j}].governance.risk: must be one of ${RISK_LEVELS.join(', ')}`);
        return;
      }
      policies.set(t.tool_id, {
        ...(typeof g.requires_hitl === 'boolean' ? { requires_hitl: g.requires_hitl } : {}),
        ...(g.risk ? { risk: g.risk as ToolPolicy['risk'] } : {}),
      });
    });
  });
  return { policies, problems };
}
