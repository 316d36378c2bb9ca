import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { AuditLog } from '../common/logging/audit-log';
import { LogContext } from '../common/logging/log-context';
import { cancel } from './lifecycle/cancel';
import { leaseActive } from './lifecycle/lease';
import { stateResponse } from './views/request-response';
import { RunningRequestsService } from './run/running-requests.service';
import { StateResponse } from './views/state-response';
import { hasEnded } from './events/stream-outcome';
import { IdempotencyClaim } from './idempotency/idempotency-claim';
import { IdempotencyService } from './idempotency/idempotency.service';
import { claimed } from './writer/task-writer.service';
import { owned } from './writer/task-access';
import { TaskReaderService } from './writer/task-reader.service';
import { TaskWriterService } from './writer/task-writer.service';

/**
 * What a cancel did: `canceled` when the outcome is stored (the request ran here and was aborted, or
 * it was paused), `asked` when another replica runs it and is asked to stop through the task.
 */
export type CancelOutcome = { kind: 'canceled' | 'asked'; body: StateResponse };

/** Cancel: an operation on a task by its owner (another owner's is 401, another tenant's 404). */
@Injectable()
export class TaskCancelService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly running: RunningRequestsService,
    private readonly audit: AuditLog,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * Cancels the running request (aborting its model call and tools: `canceled` once its outcome is
   * stored when it runs here, `asked` when another replica runs it and is asked through the task)
   * or the paused one (`canceled`; lifecycle `cancel`).
   */
  async cancel(agent: AgentDefinition, principal: Principal, taskId: string, claim?: IdempotencyClaim): Promise<CancelOutcome> {
    const outcome = await this.idempotency.once(
      claim,
      () => this.cancelRequest(agent, principal, taskId, claim),
      async (entry) => {
        // A repeat: the request the first copy canceled, as it stands (stored Canceled, or still asked to stop).
        const { task } = await this.reader.task(owned(agent, principal, entry.taskId));
        const request = entry.requestId === undefined ? undefined : await this.reader.request(task, entry.requestId);
        const body = canceled(task.taskId, task.sessionId, entry.requestId ?? '');
        return { kind: request && !hasEnded(request) ? ('asked' as const) : ('canceled' as const), body };
      },
    );
    const { task_id, session_id, request_id } = outcome.body;
    LogContext.active()?.set({ task_id, session_id, request_id });
    // The audit record keeps the HTTP status it has always carried.
    this.audit.record('request.cancelled', { task_id, session_id, request_id, status: outcome.kind === 'canceled' ? 200 : 202 });
    return outcome;
  }

  private async cancelRequest(agent: AgentDefinition, principal: Principal, taskId: string, claim: IdempotencyClaim | undefined): Promise<CancelOutcome> {
    const access = owned(agent, principal, taskId);
    const { task } = await this.reader.task(access);
    const holder = task.lease?.requestId;
    // With an Idempotency-Key the cancel is a commit first (the key needs one to be stored in), then
    // the local abort; without one a request running here is aborted at once, with no write of its own.
    if (!claim && holder && leaseActive(task, this.writer.now()) && (await this.running.cancel(holder))) {
      return { kind: 'canceled', body: canceled(task.taskId, task.sessionId, holder) };
    }
    const { result } = await this.writer.update(
      access,
      cancel(this.writer.timing),
      {},
      claimed(claim, (r) => r.requestId),
    );
    if (result.kind !== 'paused' && (await this.running.cancel(result.requestId))) {
      return { kind: 'canceled', body: canceled(task.taskId, task.sessionId, result.requestId) };
    }
    return { kind: result.kind === 'paused' ? 'canceled' : 'asked', body: canceled(task.taskId, task.sessionId, result.requestId) };
  }
}

function canceled(taskId: string, sessionId: string, requestId: string): StateResponse {
  const ids = { task_id: taskId, session_id: sessionId, request_id: requestId };
  return stateResponse(ids, 'Canceled', { ...ids, message: 'The request was canceled', reason: 'canceled' });
}
