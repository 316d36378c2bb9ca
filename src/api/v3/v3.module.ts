import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { StatefulInvoker } from '../../tasks/stateful-invoker.service';
import { RunningRequests } from '../../tasks/running-requests';
import { SessionListing } from '../../tasks/session-list.service';
import { TaskControlService } from '../../tasks/task-control.service';
import { TaskDeletion } from '../../tasks/task-deletion.service';
import { TaskEdits } from '../../tasks/task-edits.service';
import { ReplayAdmission } from '../../tasks/replay-admission';
import { TaskEventLog } from '../../tasks/task-event-log';
import { StreamEventWriter } from '../../tasks/stream-event-writer';
import { StoredStreamFollower } from '../../tasks/stored-stream-follower';
import { TaskStreamAttach } from '../../tasks/task-stream-attach';
import { TaskStreamReplay } from '../../tasks/task-stream-replay';
import { TaskQueryService } from '../../tasks/task-query.service';
import { TaskWriter } from '../../tasks/task-writer';
import { RequestRunner } from '../../tasks/request-runner.service';
import { RequestWatcher } from '../../tasks/request-watcher.service';
import { LeaseSweeper } from '../../tasks/lease-sweeper.service';
import { agUiParts } from '../ag-ui/ag-ui.parts';
import { createV3AgentController } from './v3-agent.controller';

/** tealagents/v1alpha1 agents: stateful tasks over the configured StateStore. */
@Module({})
export class V3Module {
  static register(agents: AgentDefinition[]): DynamicModule {
    return {
      module: V3Module,
      providers: [
        StatefulInvoker,
        TaskWriter,
        RequestRunner,
        RequestWatcher,
        LeaseSweeper,
        TaskQueryService,
        TaskControlService,
        TaskDeletion,
        SessionListing,
        TaskEdits,
        RunningRequests,
        TaskEventLog,
        TaskStreamReplay,
        TaskStreamAttach,
        StreamEventWriter,
        StoredStreamFollower,
        ReplayAdmission,
        ...agUiParts(agents).providers,
      ],
      controllers: [...agents.filter((a) => a.module === 'v3').map(createV3AgentController), ...agUiParts(agents).controllers],
    };
  }
}
