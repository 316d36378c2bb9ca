import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { StateStore } from '../state/state-store';
import { asRead } from './lifecycle/lapsed';
import { taskView } from './views/task-view';
import { withEdits } from './views/task-edits-view';
import { TaskWriter } from './writer/task-writer';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * Reads of a task (sessions: session-list.service.ts), scoped to the caller: another tenant's data
 * is not found (the key carries the tenant), and another owner's task in the same tenant reads as
 * not found too, so a read never confirms that someone else's task exists.
 */
@Injectable()
export class TaskQueryService {
  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriter,
  ) {}

  /**
   * The task (a pause past its approval TTL is expired first, by the writer's read); a request
   * whose lease lapsed reads Failed, abandoned, as the lease sweep will store it (lifecycle/lapsed.ts).
   */
  async getTask(agent: AgentDefinition, principal: Principal, taskId: string, includeSuperseded = false) {
    const access = { tenantId: principal.tenantId, taskId, agentSource: agent.source, ownerId: principal.ownerId, foreign: 'not-found' as const };
    const stored = await this.writer.read(access);
    const now = this.writer.now();
    const { task, requests } = asRead({ task: stored, requests: await this.store.listRequests(principal.tenantId, taskId) }, now);
    return withEdits(taskView(task, requests, agent, now), requests, includeSuperseded);
  }
}
