import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { InvocationModule } from '../../invocation/invocation.module';
import { createStatelessAgentController } from '../stateless/stateless-agent.controller';

/** skagents/v2alpha1 agents: the v1 Chat/Agent handler with a fixed BaseMultiModalInput body. */
@Module({})
export class V2Module {
  static register(agents: AgentDefinition[]): DynamicModule {
    return {
      module: V2Module,
      imports: [InvocationModule],
      controllers: agents.filter((a) => a.module === 'v2').map(createStatelessAgentController),
    };
  }
}
