import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { InvocationModule } from '../../invocation/invocation.module';
import { TasksModule } from '../../tasks/tasks.module';
import { A2aGatewayService } from './a2a-gateway.service';
import { createA2aController, createA2aRootCardController } from './a2a.controller';

/**
 * A2A (docs/a2a.md): the agent card and JSON-RPC endpoint of every agent, over the same stateful
 * services as the v3 and AG-UI routes (TasksModule) and the stateless invoker. Registered only when
 * TA_FRONT_DOORS names it; no other route pays anything for it.
 */
@Module({})
export class A2aModule {
  static register(agents: AgentDefinition[], env: EnvConfig): DynamicModule {
    return {
      module: A2aModule,
      imports: [TasksModule, InvocationModule],
      // The endpoint and its services are built on the first A2A call (a2a-gateway.service.ts): the SDK loads then.
      providers: [A2aGatewayService],
      controllers: [createA2aRootCardController(defaultAgentOf(agents, env.a2aDefaultAgent)), ...agents.map(createA2aController)],
    };
  }
}

/** The agent TA_A2A_DEFAULT_AGENT names (`name:version`); one the config does not serve stops the boot. */
export function defaultAgentOf(agents: AgentDefinition[], source: string | undefined): AgentDefinition | undefined {
  if (source === undefined) return undefined;
  const agent = agents.find((a) => a.source === source);
  if (!agent) throw new Error(`TA_A2A_DEFAULT_AGENT: no agent ${source} is served (served: ${agents.map((a) => a.source).join(', ') || 'none'})`);
  return agent;
}
