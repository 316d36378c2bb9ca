import type { Authenticator } from '../../auth/authenticator';
import type { ToolRegistry } from '../../tools/tool-registry';
import type { ReadinessCheck } from './readiness';

/**
 * The readiness checks known only once Nest has built the parts: the identity provider (when the
 * authenticator depends on one: Entra mode) and every `required: true` MCP server, which counts
 * for its own agent's readiness and the process's.
 */
export function dependencyChecks(auth: Authenticator | undefined, tools: ToolRegistry | undefined): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [];
  const idp = auth?.readiness;
  if (idp) checks.push({ name: 'identity_provider', check: idp });
  for (const m of tools?.requiredMcpServers ?? []) checks.push({ name: `mcp_server:${m.server}`, agent: m.agent, check: m.ping });
  return checks;
}
