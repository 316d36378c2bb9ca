import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';

/** MCP over Streamable HTTP (docs/mcp.md): every agent as tools. Registered only when TA_FRONT_DOORS names it. */
@Module({})
export class McpModule {
  static register(_agents: AgentDefinition[], _env: EnvConfig): DynamicModule {
    return { module: McpModule };
  }
}
