import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { RequestRecord, TaskRecord } from '../state/state.entities';
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
      if (task.status === 'Paused' && !leaseActive(task)) {
        const done = await this.cancelPaused(task);
        if (done) return { status: 200, body: done };
        continue;
      }
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
   * A request paused for approval is canceled like a decision: one compare-and-set, so it races
   * safely with a resume (one of them wins). Its pending calls are dropped; a follow-on queued
   * behind it is canceled too, since nothing runs after a canceled task. Undefined when the task
   * changed meanwhile.
   */
  private async cancelPaused(task: TaskRecord): Promise<StateResponse | undefined> {
    const requests = await this.store.listRequests(task.tenantId, task.taskId);
    const paused = [...requests].reverse().find((r) => r.status === 'Paused');
    if (!paused) throw new DomainError(ErrorCode.TASK_NOT_RUNNING, `Task ${task.taskId} has no running or paused request`);
    const now = new Date().toISOString();
    const writes: RequestRecord[] = [{ ...paused, status: 'Canceled', reason: 'canceled', pendingApprovals: undefined, updatedAt: now }];
    const queued = task.queued ? requests.find((r) => r.requestId === task.queued && r.status === 'Queued') : undefined;
    if (queued) writes.push({ ...queued, status: 'Canceled', reason: 'canceled', updatedAt: now });
    const next: TaskRecord = { ...task, status: 'Canceled', updatedAt: now };
    delete next.queued;
    try {
      await this.store.commit(task.tenantId, { task: next, expectedVersion: task.version, requests: writes });
      return canceled(task, paused.requestId);
    } catch (err) {
      if (err instanceof VersionConflictError) return undefined;
      throw err;
    }
  }

}

function canceled(task: TaskRecord, requestId: string): StateResponse {
  const ids = { task_id: task.taskId, session_id: task.sessionId, request_id: requestId };
  return { ...ids, status: 'Canceled', content: { ...ids, message: 'The request was canceled' } };
}
