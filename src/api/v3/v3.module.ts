import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { TasksModule } from '../../tasks/tasks.module';
import { agUiParts } from '../ag-ui/ag-ui.parts';
import { createV3AgentController } from './v3-agent.controller';

/** tealagents/v1alpha1 agents: the v3 and AG-UI routes over the stateful tasks (TasksModule). */
@Module({})
export class V3Module {
  static register(agents: AgentDefinition[]): DynamicModule {
    return {
      module: V3Module,
      imports: [TasksModule],
      providers: [...agUiParts(agents).providers],
      controllers: [...agents.filter((a) => a.module === 'v3').map(createV3AgentController), ...agUiParts(agents).controllers],
    };
  }
}
