import { Module } from '@nestjs/common';
import { ArchiveRetentionService } from './archive/archive-retention.service';
import { ArchiverService } from './archive/archiver.service';
import { AuditEventsService } from './archive/audit-events.service';
import { PrincipalErasureService } from './archive/principal-erasure.service';
import { TaskAuditService } from './archive/task-audit.service';
import { TaskEventLogService } from './events/task-event-log.service';
import { StreamEventWriterService } from './events/stream-event-writer.service';
import { ReplayAdmissionService } from './reattach/replay-admission.service';
import { StoredStreamFollowerService } from './reattach/stored-stream-follower.service';
import { TaskStreamAttachService } from './reattach/task-stream-attach.service';
import { TaskStreamReplayService } from './reattach/task-stream-replay.service';
import { IdempotencyService } from './idempotency/idempotency.service';
import { IdempotentReplayService } from './idempotency/idempotent-replay.service';
import { WebhookOutboxService } from './webhooks/webhook-outbox.service';
import { WebhookAdminService } from './webhooks/webhook-admin.service';
import { LeaseSweeperService } from './run/lease-sweeper.service';
import { RequestRunnerService } from './run/request-runner.service';
import { RequestWatcherService } from './run/request-watcher.service';
import { RunningRequestsService } from './run/running-requests.service';
import { SessionListService } from './session-list.service';
import { StatefulInvokerService } from './stateful-invoker.service';
import { TaskCancelService } from './task-cancel.service';
import { TaskDeletionService } from './task-deletion.service';
import { TaskEditsService } from './task-edits.service';
import { TaskQueryService } from './task-query.service';
import { TaskReaderService } from './writer/task-reader.service';
import { TaskWriterService } from './writer/task-writer.service';

/**
 * Stateful tasks: the front doors at the root of src/tasks (start and resume, cancel, edit and
 * fork, delete, reads, session listings) over the rooms below them — lifecycle/ (pure
 * transitions), writer/ (the one writer, its cache, lanes and the access check, and the one reader beside it), run/ (running a
 * request, its lease, the sweep of lapsed leases), events/ (the per-process and the stored event
 * logs), reattach/ (replay and follow), idempotency/ (Idempotency-Key), webhooks/ (the outbox and its delivery), views/ (response mappers). One instance of each per
 * application, shared by the v3 routes and AG-UI, which import this module.
 */
@Module({
  providers: [
    StatefulInvokerService,
    TaskWriterService,
    TaskReaderService,
    RequestRunnerService,
    RequestWatcherService,
    LeaseSweeperService,
    TaskQueryService,
    TaskCancelService,
    TaskDeletionService,
    SessionListService,
    TaskEditsService,
    RunningRequestsService,
    TaskEventLogService,
    TaskStreamReplayService,
    TaskStreamAttachService,
    StreamEventWriterService,
    StoredStreamFollowerService,
    ReplayAdmissionService,
    ArchiverService,
    TaskAuditService,
    AuditEventsService,
    PrincipalErasureService,
    ArchiveRetentionService,
    IdempotencyService,
    IdempotentReplayService,
    WebhookOutboxService,
    WebhookAdminService,
  ],
  exports: [
    StatefulInvokerService,
    TaskQueryService,
    TaskCancelService,
    TaskDeletionService,
    SessionListService,
    TaskEditsService,
    TaskStreamReplayService,
    TaskStreamAttachService,
    TaskEventLogService,
    ArchiverService,
    TaskAuditService,
    AuditEventsService,
    PrincipalErasureService,
    ArchiveRetentionService,
    IdempotencyService,
    IdempotentReplayService,
    WebhookAdminService,
    // Read by the config reload through app.get: how many requests run, and the sweep to stop.
    RunningRequestsService,
    LeaseSweeperService,
  ],
})
export class TasksModule {}
