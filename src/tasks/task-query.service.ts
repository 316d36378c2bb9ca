import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { taskSummaryView, taskView } from './task-view';
import { TaskWriter } from './task-writer';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * Reads of tasks and sessions, scoped to the caller: another tenant's data is not found (the key
 * carries the tenant), and another owner's task in the same tenant reads as not found too, so a
 * read never confirms that someone else's task exists.
 */
@Injectable()
export class TaskQueryService {
  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriter,
  ) {}

  /** The task (a pause past its approval TTL is expired first, by the writer's read). */
  async getTask(agent: AgentDefinition, principal: Principal, taskId: string) {
    const access = { tenantId: principal.tenantId, taskId, agentSource: agent.source, ownerId: principal.ownerId, foreign: 'not-found' as const };
    const task = await this.writer.read(access);
    return taskView(task, await this.store.listRequests(principal.tenantId, taskId), agent);
  }

  async getSession(agent: AgentDefinition, principal: Principal, sessionId: string, limit: number, cursor?: string) {
    const page = await this.store.listSessionTasks(principal.tenantId, principal.ownerId, sessionId, { limit, cursor });
    const tasks = page.items.filter((t) => t.agent === agent.source);
    if (!tasks.length && !cursor) throw new DomainError(ErrorCode.SESSION_NOT_FOUND, `No session ${sessionId}`);
    return { session_id: sessionId, tasks: tasks.map(taskSummaryView), next_cursor: page.nextCursor ?? null };
  }
}
