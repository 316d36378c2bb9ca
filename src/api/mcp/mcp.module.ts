import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { InvocationModule } from '../../invocation/invocation.module';
import { TasksModule } from '../../tasks/tasks.module';
import { createMcpController } from './mcp.controller';
import { McpElicitationsService } from './mcp-elicitations.service';
import { McpEndpointService } from './mcp-endpoint.service';
import { McpToolsService } from './mcp-tools.service';
import { createProtectedResourceController, RootProtectedResourceController } from './protected-resource.controller';

/**
 * MCP over Streamable HTTP (docs/mcp.md): every agent as tools at `/{name}/{version}/mcp`, over the
 * same stateful services as the v3 routes (TasksModule) and the stateless invoker. With Entra auth,
 * the protected-resource metadata that MCP clients discover the authorization server by.
 * Registered only when TA_FRONT_DOORS names it; the SDK is loaded on the first MCP request.
 */
@Module({})
export class McpModule {
  static register(agents: AgentDefinition[], env: EnvConfig): DynamicModule {
    const metadata = env.auth.mode === 'entra' ? [RootProtectedResourceController, ...agents.map(createProtectedResourceController)] : [];
    return {
      module: McpModule,
      imports: [TasksModule, InvocationModule],
      providers: [McpToolsService, McpEndpointService, McpElicitationsService],
      controllers: [...agents.map(createMcpController), ...metadata],
    };
  }
}
