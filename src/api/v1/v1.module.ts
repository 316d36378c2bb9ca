import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { InvocationModule } from '../../invocation/invocation.module';
import { createStatelessAgentController } from '../stateless/stateless-agent.controller';

/** skagents/v1 agents (Chat, Agent, Sequential): stateless invoke and SSE. */
@Module({})
export class V1Module {
  static register(agents: AgentDefinition[]): DynamicModule {
    return {
      module: V1Module,
      imports: [InvocationModule],
      controllers: agents.filter((a) => a.module === 'v1').map(createStatelessAgentController),
    };
  }
}
