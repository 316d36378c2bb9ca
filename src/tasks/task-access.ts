import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { TaskRecord } from '../state/state.entities';

/**
 * The caller's own task of this agent, for operations on it (cancel, resume, stream replay):
 * another tenant's task is not found (404), another owner's is refused (401), as for follow-ons.
 */
export async function ownedTask(store: StateStore, agent: AgentDefinition, principal: Principal, taskId: string): Promise<TaskRecord> {
  const task = await store.getTask(principal.tenantId, taskId);
  if (!task || task.agent !== agent.source) throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${taskId}`);
  if (task.ownerId !== principal.ownerId) throw new DomainError(ErrorCode.NOT_OWNER, 'This task belongs to another user');
  return task;
}
