import { Injectable } from '@nestjs/common';
import { newUuid } from '../common/ids/uuid.util';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { AuditLog } from '../common/logging/audit-log';
import { TaskRecord } from '../state/state.entities';
import { edit } from './lifecycle/edit';
import { appendForked, fork } from './lifecycle/fork';
import { StatefulInvokerService, withCheckedWebhook } from './stateful-invoker.service';
import type { StartedRequest } from './run/started-request';
import { claimed } from './writer/task-writer.service';
import { IdempotencyClaim } from './idempotency/idempotency-claim';
import { IdempotencyService } from './idempotency/idempotency.service';
import { IdempotentReplayService } from './idempotency/idempotent-replay.service';
import { owned } from './writer/task-access';
import { assertStorable } from './run/storable-request';
import { newRequestRecord } from './run/task-records';
import { withEdits } from './views/task-edits-view';
import { taskView } from './views/task-view';
import { TaskReaderService } from './writer/task-reader.service';
import { TaskWriterService } from './writer/task-writer.service';
import type { UserMessage } from './run/user-message';

/** Requests per commit of a fork (DynamoDB takes at most 49 in one transaction). */
const FORK_BATCH = 40;

/**
 * Edit and rerun, and fork (docs/api.md, Edit and fork): each one lifecycle transition
 * (src/tasks/lifecycle/edit.ts, fork.ts) applied by the task writer, so the compare-and-set,
 * ownership and tenant rules are those of every other write; the edited request then runs as any
 * admitted request does (StatefulInvokerService.runnable).
 */
@Injectable()
export class TaskEditsService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly invoker: StatefulInvokerService,
    private readonly audit: AuditLog,
    private readonly idempotency: IdempotencyService,
    private readonly replays: IdempotentReplayService,
  ) {}

  /** Replaces the user turn of `requestId` and runs from it under a new request id. Another owner's task is 401. */
  edit(agent: AgentDefinition, principal: Principal, taskId: string, requestId: string, msg: UserMessage, claim?: IdempotencyClaim): Promise<StartedRequest> {
    return this.idempotency.once(
      claim,
      () => this.editOnce(agent, principal, taskId, requestId, msg, claim),
      (entry) => this.replays.started(agent, principal, entry),
    );
  }

  private async editOnce(
    agent: AgentDefinition,
    principal: Principal,
    taskId: string,
    requestId: string,
    given: UserMessage,
    claim: IdempotencyClaim | undefined,
  ): Promise<StartedRequest> {
    const msg = withCheckedWebhook(agent, given);
    if (msg.task_id !== undefined && msg.task_id !== taskId) {
      const message = 'task_id must be the task of the URL (or absent)';
      throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'task_id', message }] });
    }
    const placeholder = { taskId, sessionId: msg.session_id ?? '' } as TaskRecord;
    const transition = edit({
      requestId,
      request: assertStorable(this.writer.maxRequestBytes, newRequestRecord(placeholder, principal, msg, 0)),
      sessionId: msg.session_id,
      timing: this.writer.timing,
    });
    const { result } = await this.writer.update(
      owned(agent, principal, taskId),
      transition,
      {},
      claimed(claim, (r) => r.request.requestId),
    );
    const started = this.invoker.runnable(agent, result);
    this.audit.record('request.edited', { ...started.ids, edited_request_id: requestId });
    return started;
  }

  /**
   * A new task holding the history of `taskId` up to `requestId`, in `sessionId` or the source's
   * session; the source is only read (another owner's task reads as not found, as `GET` does).
   * Answers the new task's view. With an Idempotency-Key, a repeat answers the view of the task the
   * first copy created (as it stands then).
   */
  fork(agent: AgentDefinition, principal: Principal, taskId: string, body: { request_id?: string; session_id?: string }, claim?: IdempotencyClaim) {
    return this.idempotency.once(
      claim,
      () => this.forkOnce(agent, principal, taskId, body, claim),
      async (entry) => {
        const { task, requests } = await this.reader.task(owned(agent, principal, entry.taskId), 'all');
        return withEdits(taskView(task, requests, agent, this.writer.now()), requests, false);
      },
    );
  }

  private async forkOnce(
    agent: AgentDefinition,
    principal: Principal,
    taskId: string,
    body: { request_id?: string; session_id?: string },
    claim: IdempotencyClaim | undefined,
  ) {
    const access = { ...owned(agent, principal, taskId), foreign: 'not-found' as const };
    const forked = fork(
      await this.reader.task(access, 'all'),
      { taskId: newUuid(), requestId: body.request_id, sessionId: body.session_id, mint: newUuid, timing: this.writer.timing },
      this.writer.now(),
    );
    const batches = chunks(forked.requests, FORK_BATCH);
    const first = batches.shift()!;
    const change = { task: { ...forked.task, requestCount: first.length }, requests: first, result: undefined };
    let { task } = await this.writer.create(
      principal.tenantId,
      change,
      claimed(claim, () => undefined),
    );
    for (const batch of batches) {
      task = (await this.writer.update({ tenantId: principal.tenantId, taskId: task.taskId }, appendForked(batch, this.writer.timing))).task;
    }
    return withEdits(taskView(task, forked.requests, agent, this.writer.now()), forked.requests, false);
  }
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
