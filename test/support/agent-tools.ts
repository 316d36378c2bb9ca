import { ConfigError } from '../../src/agents/config/config-error';
import { loadAgentConfigs } from '../../src/agents/config/load-agent-configs';
import type { ToolsConfig } from '../../src/config/env.config';
import { ToolRegistry } from '../../src/tools/tool-registry';
import type { Tool } from '../../src/tools/tool.port';
import { DEFAULT_TOOLS_CONFIG } from '../../src/tools/tools.config';

/** Loads the agents of `dir` and builds the first one's toolset, as the boot does. Close the registry when done. */
export async function toolsFor(dir: string, config: Partial<ToolsConfig> = {}): Promise<{ tools: Map<string, Tool>; registry: ToolRegistry }> {
  const agents = loadAgentConfigs(dir);
  const registry = ToolRegistry.build(agents, { ...DEFAULT_TOOLS_CONFIG, ...config });
  return { tools: new Map(await registry.toolsetFor(agents[0]!.agent).resolve()), registry };
}

/** The problems that stop the boot of the agents of `dir` at their tools ([] when they build: then closed at once). */
export async function toolBootProblems(dir: string, config: Partial<ToolsConfig> = {}): Promise<string[]> {
  try {
    await ToolRegistry.build(loadAgentConfigs(dir), { ...DEFAULT_TOOLS_CONFIG, ...config }).close();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}
