import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import type { AgentSpecConfig } from '../agents/config/agent.schema';
import { ConfigError } from '../agents/config/config-error';
import type { ToolPolicy } from '../agents/config/governance.schema';
import type { ToolsConfig } from '../config/env.config';
import { McpClientManager } from './mcp/mcp-client-manager';
import { loadPluginCatalog } from './plugin-catalog';
import { PluginLoader } from './plugins/plugin-loader';
import { checkPlugin, pluginTools } from './plugins/plugin-tools';
import type { PluginDefinition } from './plugins/plugin.types';
import { DEFAULT_PYTHON_PLUGINS, PythonPluginHost } from './python/python-plugin-host';
import { OpenApiTool } from './remote/openapi-tool';
import { readOpenApiDocument } from './remote/openapi-operations';
import { loadRemotePluginCatalog, RemotePluginEntry } from './remote/remote-plugin-catalog';
import type { Tool } from './tool.port';
import { governancePolicy, ToolSource, Toolset } from './toolset';

const REMOTE_CATALOG_NEXT_TO_CONFIG = 'remote-plugin-catalog.yaml';

/** An MCP server an agent marks `required: true`: part of readiness. */
export interface RequiredMcpServer {
  /** The agent's `name:version`. */
  agent: string;
  server: string;
  /** Resolves when the server answers a ping; rejects naming it when not. */
  ping(): Promise<void>;
}

/**
 * The toolset of every agent, built at boot: plugins are loaded and checked, remote plugins'
 * OpenAPI documents read, MCP servers registered (they connect on first use). Any problem (a
 * plugin that does not exist, a broken OpenAPI document) stops the boot with the file and the
 * field, like every other config problem.
 */
export class ToolRegistry {
  private constructor(
    private readonly toolsets: Map<AgentSpecConfig, Toolset>,
    readonly mcp: McpClientManager,
    /** The MCP servers readiness waits for (`mcp_servers[].required: true`). */
    readonly requiredMcpServers: readonly RequiredMcpServer[] = [],
    /** One Python plugin host per plugin module that agents name classes of. */
    readonly pythonHosts: readonly PythonPluginHost[] = [],
  ) {}

  toolsetFor(spec: AgentSpecConfig): Toolset {
    return this.toolsets.get(spec) ?? Toolset.EMPTY;
  }

  /** Ends every MCP session and stops stdio children, Python plugin hosts included. */
  async close(): Promise<void> {
    await Promise.allSettled([this.mcp.close(), ...this.pythonHosts.map((h) => h.close())]);
  }

  static build(agents: AgentDefinition[], config: ToolsConfig, logger?: Logger): ToolRegistry {
    const problems: string[] = [];
    if (config.pluginModule && !existsSync(config.pluginModule)) problems.push(`TA_PLUGIN_MODULE: ${config.pluginModule} does not exist`);
    const plugins = new PluginLoader(config.pluginModule);
    const remote = remoteCatalogs(config, problems);
    const catalog = config.pluginCatalogFile ? loadPluginCatalog(config.pluginCatalogFile) : undefined;
    if (catalog) problems.push(...catalog.problems);
    const mcp = new McpClientManager(undefined, logger);
    const toolsets = new Map<AgentSpecConfig, Toolset>();
    const required: RequiredMcpServer[] = [];
    const openApiTools = new Map<string, Tool[] | null>();
    const python = config.python ?? DEFAULT_PYTHON_PLUGINS;
    const pythonHosts = new Map<string, { host: PythonPluginHost; where: Map<string, string[]> }>();

    for (const agent of agents) {
      const specs: [AgentSpecConfig, string][] = agent.sequential
        ? [...agent.sequential.agents.values()].map((s, i) => [s, `spec.agents[${i}]`])
        : [[agent.agent, 'spec.agent']];
      const policyOf = (name: string): ToolPolicy | undefined => {
        const own = governancePolicy(agent.governance, name);
        const cat = catalog?.policies.get(name);
        return own || cat ? { ...cat, ...stripUndefined(own) } : undefined;
      };
      for (const [spec, at] of specs) {
        const where = (field: string) => `${agent.file}: ${at}.${field}`;
        const fixed: Tool[] = [];
        const sources: ToolSource[] = [];
        const names = new Set<string>();

        (spec.plugins ?? []).forEach((name, i) => {
          const found = plugins.find(name, agent.file);
          if (found.python) {
            if (!python.enabled) {
              problems.push(`${where(`plugins[${i}]`)}: ${pythonPluginRefusal(found.python)}`);
              return;
            }
            const { file, className } = found.python;
            let entry = pythonHosts.get(file);
            if (!entry) pythonHosts.set(file, (entry = { host: new PythonPluginHost(file, python, logger), where: new Map() }));
            entry.host.add(className);
            const fields = entry.where.get(agent.file) ?? [];
            entry.where.set(agent.file, [...fields, `${at}.plugins[${i}]`]);
            sources.push(entry.host.source(className));
            names.add(name);
            return;
          }
          if (!found.plugin) {
            const failed = found.failures.length ? `; modules that failed to load: ${found.failures.join('; ')}` : '';
            // A Python module that exists but lacks the class is worth naming: it was scanned, not imported.
            const py = found.searched.filter((f) => /\.py$/i.test(f) && existsSync(f));
            const python = py.length ? `; Python modules scanned for a class of that name: ${py.join(', ')}` : '';
            problems.push(`${where(`plugins[${i}]`)}: plugin "${name}" not found (looked in ${found.searched.join(', ')})${failed}${python}`);
            return;
          }
          const own = checkPlugin(found.plugin as PluginDefinition);
          if (own.length) problems.push(...own.map((p) => `${where(`plugins[${i}]`)}: ${found.file}: ${p}`));
          else fixed.push(...pluginTools(found.plugin));
          names.add(name);
        });

        (spec.remote_plugins ?? []).forEach((name, i) => {
          const catalog = remote(agent.file);
          if (!catalog) {
            problems.push(
              `${where(`remote_plugins[${i}]`)}: "${name}" needs a remote plugin catalog: set TA_REMOTE_PLUGIN_PATH, or put plugins/${REMOTE_CATALOG_NEXT_TO_CONFIG} next to the config`,
            );
            return;
          }
          const entry = catalog.entries.get(name);
          if (!entry) {
            problems.push(`${where(`remote_plugins[${i}]`)}: remote plugin "${name}" is not in ${catalog.path}`);
            return;
          }
          const key = `${catalog.path}#${name}`;
          if (!openApiTools.has(key)) openApiTools.set(key, openApiToolsOf(entry, problems, where(`remote_plugins[${i}]`)));
          fixed.push(...(openApiTools.get(key) ?? []));
          names.add(name);
        });

        (spec.mcp_servers ?? []).forEach((server, i) => {
          if (names.has(server.name)) {
            problems.push(`${where(`mcp_servers[${i}].name`)}: "${server.name}" is also a plugin name of this agent; tool names would collide`);
            return;
          }
          if ((server.user_id_header || server.tenant_id_header) && server.transport === 'stdio') {
            logger?.warn(
              { file: agent.file, mcp_server: server.name },
              'user_id_header and tenant_id_header apply to the http transport only; ignored for stdio',
            );
          }
          sources.push(mcp.source(server));
          if (server.required) required.push({ agent: agent.source, server: server.name, ping: () => mcp.ping(server) });
        });

        toolsets.set(spec, fixed.length || sources.length ? new Toolset(fixed, sources, policyOf, logger) : Toolset.EMPTY);
      }
    }
    // Each Python module is imported once at boot, by a one-off run of its host: a module that does not import stops the boot here.
    for (const { host, where } of pythonHosts.values()) {
      const problem = host.check();
      if (problem) {
        // One problem per module, naming every config field that named one of its classes.
        const fields = [...where].map(([file, f]) => `${file}: ${f.join(', ')}`).join('; ');
        problems.push(`${fields}: Python plugins ${host.classNames.join(', ')} of ${host.module}: ${problem}`);
      }
    }
    if (problems.length) {
      void mcp.close();
      throw new ConfigError(problems);
    }
    return new ToolRegistry(
      toolsets,
      mcp,
      required,
      [...pythonHosts.values()].map((e) => e.host),
    );
  }
}

/**
 * The remote plugin catalog of an agent: `TA_REMOTE_PLUGIN_PATH`, else `plugins/remote-plugin-catalog.yaml`
 * next to the agent's config (as plugin modules are found there). Read once per file, and only if
 * some agent names a remote plugin.
 */
function remoteCatalogs(config: ToolsConfig, problems: string[]): (agentFile: string) => { path: string; entries: Map<string, RemotePluginEntry> } | undefined {
  const loaded = new Map<string, Map<string, RemotePluginEntry>>();
  return (agentFile) => {
    const path = config.remotePluginPath ?? join(dirname(agentFile), 'plugins', REMOTE_CATALOG_NEXT_TO_CONFIG);
    if (!config.remotePluginPath && !existsSync(path)) return undefined;
    let entries = loaded.get(path);
    if (!entries) {
      const r = loadRemotePluginCatalog(path);
      problems.push(...r.problems);
      loaded.set(path, (entries = r.entries));
    }
    return { path, entries };
  };
}

function openApiToolsOf(entry: RemotePluginEntry, problems: string[], where: string): Tool[] | null {
  try {
    const doc = readOpenApiDocument(entry.openapi_json_path);
    const server = entry.server_url ?? doc.servers[0];
    if (!server || !/^https?:\/\//.test(server)) {
      problems.push(`${where}: ${entry.openapi_json_path}: no absolute server URL (set server_url in the catalog)`);
      return null;
    }
    return doc.operations.map((op) => new OpenApiTool(entry.plugin_name, op, server, entry.forward_token === true));
  } catch (err) {
    problems.push(`${where}: ${entry.openapi_json_path}: ${(err as Error).message}`);
    return null;
  }
}

/** With TA_PYTHON_PLUGINS=off, an upstream Python plugin class is refused, saying so. */
function pythonPluginRefusal({ file, className }: { file: string; className: string }): string {
  return (
    `plugin "${className}" is the Python class ${className} in ${file}: Python plugins are turned off (TA_PYTHON_PLUGINS=off). ` +
    `Port it to a TypeScript or JavaScript plugin named "${className}" (in custom_plugins.ts beside the config, ` +
    `or in TA_PLUGIN_MODULE; see docs/tools.md)`
  );
}

function stripUndefined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}
