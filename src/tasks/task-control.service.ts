import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { TaskRecord } from '../state/state.entities';
import { VersionConflictError } from '../state/state.errors';
import { RunningRequests } from './running-requests';
import { StateResponse } from './state-response';
import { leaseActive } from './task-lease';
import { ownedTask } from './task-access';

const MAX_ATTEMPTS = 4;

/**
 * Cancel and resume: operations on a task by its owner. Ownership is checked the way follow-ons
 * check it: another tenant's task is not found (404), another owner's is refused (401).
 */
@Injectable()
export class TaskControlService {
  constructor(
    private readonly store: StateStore,
    private readonly running: RunningRequests,
  ) {}

  /** Cancels the running request of a task (aborting its model call and tools). */
  async cancel(agent: AgentDefinition, principal: Principal, taskId: string): Promise<{ status: number; body: StateResponse }> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const task = await ownedTask(this.store, agent, principal, taskId);
      const requestId = task.lease?.requestId;
      if (!requestId || !leaseActive(task)) {
        throw new DomainError(ErrorCode.TASK_NOT_RUNNING, `Task ${taskId} has no running request to cancel`);
      }
      const body = canceled(task, requestId);
      if (await this.running.cancel(requestId)) return { status: 200, body };
      // Running in another replica: ask it through the task record; it aborts on its next renewal.
      try {
        await this.store.commit(principal.tenantId, {
          task: { ...task, cancelRequested: requestId },
          expectedVersion: task.version,
        });
        return { status: 202, body };
      } catch (err) {
        if (!(err instanceof VersionConflictError)) throw err;
      }
    }
    throw new DomainError(ErrorCode.TASK_BUSY, `Task ${taskId} changed while canceling; try again`);
  }

  /**
   * Resume of a paused request. A request pauses only for a human approval of tool calls, which this
   * build does not ask for yet, so no request is ever paused: an owned request is 409.
   */
  async resume(agent: AgentDefinition, principal: Principal, requestId: string): Promise<never> {
    const request = await this.store.getRequest(principal.tenantId, requestId);
    if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${requestId}`);
    await ownedTask(this.store, agent, principal, request.taskId);
    throw new DomainError(ErrorCode.TASK_NOT_PAUSED, `Request ${requestId} is not waiting for a decision (status ${request.status})`);
  }
}

function canceled(task: TaskRecord, requestId: string): StateResponse {
  const ids = { task_id: task.taskId, session_id: task.sessionId, request_id: requestId };
  return { ...ids, status: 'Canceled', content: { ...ids, message: 'The request was canceled' } };
}
