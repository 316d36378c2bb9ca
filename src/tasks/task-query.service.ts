import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { RequestRecord } from '../state/state.entities';
import { asRead } from './lifecycle/lapsed';
import { taskView } from './views/task-view';
import { withEdits } from './views/task-edits-view';
import { owned } from './writer/task-access';
import { TaskReaderService } from './writer/task-reader.service';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * Reads of a task (sessions: session-list.service.ts), scoped to the caller: another tenant's data
 * is not found (the key carries the tenant), and another owner's task in the same tenant reads as
 * not found too, so a read never confirms that someone else's task exists.
 */
@Injectable()
export class TaskQueryService {
  constructor(private readonly reader: TaskReaderService) {}

  /**
   * The task (a pause past its approval TTL is expired first, by the writer's read); a request
   * whose lease lapsed reads Failed, abandoned, as the lease sweep will store it (lifecycle/lapsed.ts).
   */
  async getTask(agent: AgentDefinition, principal: Principal, taskId: string, includeSuperseded = false) {
    const access = { tenantId: principal.tenantId, taskId, agentSource: agent.source, ownerId: principal.ownerId, foreign: 'not-found' as const };
    const read = await this.reader.task(access, 'all');
    const now = this.reader.now();
    const { task, requests } = asRead(read, now);
    return withEdits(taskView(task, requests, agent, now), requests, includeSuperseded);
  }

  /**
   * The paused request of the caller's task a decision is for (AG-UI): the one that holds pause
   * `pauseId` (open, or decided before), or the one waiting on any of the tool calls `callIds`.
   * Another owner's task is 401, as for the decision itself.
   */
  async pausedRequest(
    agent: AgentDefinition,
    principal: Principal,
    taskId: string,
    which: { pauseId: string } | { callIds: string[] },
  ): Promise<RequestRecord | undefined> {
    const requests = await this.requests(agent, principal, taskId);
    if ('pauseId' in which) return requests.find((r) => r.pendingApprovals?.pauseId === which.pauseId || r.approvals?.some((a) => a.pauseId === which.pauseId));
    return requests.find((r) => r.status === 'Paused' && r.pendingApprovals?.pending.some((id) => which.callIds.includes(id)));
  }

  /**
   * The requests of the caller's task, in `seq` order, for an operation on it (AG-UI sends the
   * conversation): another owner's task is 401, as for the operation itself.
   */
  async requests(agent: AgentDefinition, principal: Principal, taskId: string): Promise<RequestRecord[]> {
    return (await this.reader.task(owned(agent, principal, taskId), 'all')).requests;
  }

  /**
   * The id of the task holding request `requestId` of the caller's tenant (A2A names a request
   * alone), or undefined; whose it is, is checked by the operation on it.
   */
  taskIdOfRequest(principal: Principal, requestId: string): Promise<string | undefined> {
    return this.reader.taskOfRequest(principal.tenantId, requestId.toLowerCase());
  }

  /** Whether the tenant has a request `requestId` (in any task): a new request may not take its id. */
  async requestIdTaken(principal: Principal, requestId: string): Promise<boolean> {
    return (await this.reader.taskOfRequest(principal.tenantId, requestId)) !== undefined;
  }
}
