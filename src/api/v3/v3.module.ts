import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { TasksModule } from '../../tasks/tasks.module';
import { agUiParts } from '../ag-ui/ag-ui.parts';
import { createV3AgentController } from './v3-agent.controller';

/**
 * tealagents/v1alpha1 agents: the v3 and AG-UI routes over the stateful tasks (TasksModule), each
 * front door only when TA_FRONT_DOORS names it (`rest`, `agui`). TasksModule is imported either way:
 * the other front doors run their tasks through it.
 */
@Module({})
export class V3Module {
  static register(agents: AgentDefinition[], doors: { rest: boolean; agui: boolean } = { rest: true, agui: true }): DynamicModule {
    const agUi = doors.agui ? agUiParts(agents) : { providers: [], controllers: [] };
    return {
      module: V3Module,
      imports: [TasksModule],
      providers: [...agUi.providers],
      controllers: [...(doors.rest ? agents.filter((a) => a.module === 'v3').map(createV3AgentController) : []), ...agUi.controllers],
    };
  }
}
