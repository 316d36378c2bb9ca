/**
 * Who may reach which task: the access a caller's operation carries, and the one check of it that
 * the writer applies on every read and write (and the reads beside it).
 */
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { TaskRecord } from '../../state/state.entities';

/** Which task, and (for a caller's operation) whose: checked once, here, on every read and write. */
export interface TaskAccess {
  tenantId: string;
  taskId: string;
  /** The agent serving the call (`name:version`): another agent's task does not exist here (404). */
  agentSource?: string;
  /** The caller: another owner's task is refused (401, the upstream contract) or, for reads, not found. */
  ownerId?: string;
  foreign?: 'not-owner' | 'not-found';
}

/** The caller's own task of this agent, for operations on it: another owner's is 401 (the upstream contract). */
export function owned(agent: AgentDefinition, principal: Principal, taskId: string): TaskAccess {
  return { tenantId: principal.tenantId, taskId, agentSource: agent.source, ownerId: principal.ownerId, foreign: 'not-owner' };
}

/** Another tenant's or agent's task does not exist; another owner's is 401 (or 404 for reads). */
export function checked(task: TaskRecord | undefined, access: TaskAccess): TaskRecord {
  const refusal = refusalOf(task, access);
  if (refusal) throw refusal;
  return task!;
}

/** Why `access` may not have `task` (see `checked`); undefined when it may. */
export function refusalOf(task: TaskRecord | undefined, access: TaskAccess): DomainError | undefined {
  if (!task || (access.agentSource !== undefined && task.agent !== access.agentSource)) {
    return new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${access.taskId}`);
  }
  if (access.ownerId !== undefined && task.ownerId !== access.ownerId) {
    if (access.foreign === 'not-found') return new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${access.taskId}`);
    return new DomainError(ErrorCode.NOT_OWNER, 'This task belongs to another user');
  }
  return undefined;
}
