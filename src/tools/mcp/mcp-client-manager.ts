import type { Logger } from 'pino';
import type { McpServerConfig } from '../../agents/config/mcp-server.schema';
import type { Tool } from '../tool.port';
import type { ToolSource } from '../toolset';
import type { McpConnection, McpToolInfo } from './mcp-connection';
import { McpTool } from './mcp-tool';

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/**
 * Every MCP connection of the process, one per configured server of each agent, created at boot
 * but connected on first use. Closing the manager (on application shutdown) ends every session
 * and stops every stdio child.
 */
export class McpClientManager {
  private readonly connections: McpConnection[] = [];
  private readonly byConfig = new Map<McpServerConfig, McpConnection>();

  constructor(
    /** Connecting and listing, when a server sets no `timeout` (upstream's default: 30 s). */
    private readonly connectTimeoutMs: number = DEFAULT_CONNECT_TIMEOUT_MS,
    private readonly logger?: Logger,
  ) {}

  /** The tools of one server, as a source for a toolset. */
  source(config: McpServerConfig): ToolSource {
    const connection = this.connectionFor(config);
    let mapped: { from: McpToolInfo[]; tools: Tool[] } | undefined;
    return {
      name: `mcp:${config.name}`,
      unreachable: `MCP server ${config.name} unreachable`,
      list: async (): Promise<Tool[]> => {
        const infos = await connection.listTools();
        if (mapped?.from !== infos) mapped = { from: infos, tools: infos.map((info) => new McpTool(connection, info)) };
        return mapped.tools;
      },
    };
  }

  /** Whether the server answers now (readiness of a `required: true` server): see McpConnection.ping. */
  ping(config: McpServerConfig): Promise<void> {
    return this.connectionFor(config).ping();
  }

  /** One connection per configured server (per agent), made on first mention. */
  private connectionFor(config: McpServerConfig): McpConnection {
    let connection = this.byConfig.get(config);
    if (!connection) {
      // Loaded here, not at the top: the MCP SDK (with ajv and zod, ~260 modules) is for agents that name MCP servers.
      const { McpConnection } = require('./mcp-connection') as typeof import('./mcp-connection');
      // upstream's `timeout` is the connection timeout, in seconds (calls have `request_timeout`).
      connection = new McpConnection(config, config.timeout ? config.timeout * 1000 : this.connectTimeoutMs, this.logger);
      this.connections.push(connection);
      this.byConfig.set(config, connection);
    }
    return connection;
  }

  /** For tests and diagnostics: the connection of a server by name. */
  connection(name: string): McpConnection | undefined {
    return this.connections.find((c) => c.name === name);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.connections.map((c) => c.close()));
  }
}
