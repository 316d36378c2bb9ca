import { Module } from '@nestjs/common';
import { TaskEventLog } from './events/task-event-log';
import { StreamEventWriter } from './events/stream-event-writer';
import { ReplayAdmission } from './reattach/replay-admission';
import { StoredStreamFollower } from './reattach/stored-stream-follower';
import { TaskStreamAttach } from './reattach/task-stream-attach';
import { TaskStreamReplay } from './reattach/task-stream-replay';
import { LeaseSweeper } from './run/lease-sweeper.service';
import { RequestRunner } from './run/request-runner.service';
import { RequestWatcher } from './run/request-watcher.service';
import { RunningRequests } from './run/running-requests';
import { SessionListing } from './session-list.service';
import { StatefulInvoker } from './stateful-invoker.service';
import { TaskControlService } from './task-control.service';
import { TaskDeletion } from './task-deletion.service';
import { TaskEdits } from './task-edits.service';
import { TaskQueryService } from './task-query.service';
import { TaskWriter } from './writer/task-writer';

/**
 * Stateful tasks: the front doors at the root of src/tasks (start and resume, cancel, edit and
 * fork, delete, reads, session listings) over the rooms below them — lifecycle/ (pure
 * transitions), writer/ (the one writer, its cache, lanes and the access check), run/ (running a
 * request, its lease, the sweep of lapsed leases), events/ (the per-process and the stored event
 * logs), reattach/ (replay and follow), views/ (response mappers). One instance of each per
 * application, shared by the v3 routes and AG-UI, which import this module.
 */
@Module({
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
  ],
  exports: [
    StatefulInvoker,
    TaskQueryService,
    TaskControlService,
    TaskDeletion,
    SessionListing,
    TaskEdits,
    TaskStreamReplay,
    TaskStreamAttach,
    TaskEventLog,
    // AG-UI still reads the task it resumes through the writer (issue 21: one owner-checked reader).
    TaskWriter,
    // Read by the config reload through app.get: how many requests run, and the sweep to stop.
    RunningRequests,
    LeaseSweeper,
  ],
})
export class TasksModule {}
