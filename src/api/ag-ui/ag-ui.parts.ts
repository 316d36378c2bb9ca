import { AgentDefinition } from '../../agents/config/agent-definition';
import { createAgUiController } from './ag-ui.controller';
import { AgUiRunsService } from './ag-ui-runs.service';

/**
 * The AG-UI route's controllers and providers, registered by the V3Module: they run over the same
 * StatefulInvokerService, task writer and event log instances as the v3 routes (TasksModule, one per
 * application).
 */
export function agUiParts(agents: AgentDefinition[]) {
  return {
    providers: [AgUiRunsService],
    controllers: agents.filter((a) => a.module === 'v3').map(createAgUiController),
  };
}
