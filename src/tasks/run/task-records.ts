import { newUuid } from '../../common/ids/uuid.util';
import type { Principal } from '../../auth/principal';
import { emptyUsage } from '../../llm/llm-client.port';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { frozen } from '../../state/state-store.util';
import type { UserMessage } from './user-message';
import { isoNow } from '../../common/time/iso-time';

/**
 * A new task header for a first message (version 0: the create is `expectedVersion: 0`), under the
 * `task_id` the caller named (upstream lets callers choose it) or a new one.
 */
export function newTaskRecord(agentSource: string, principal: Principal, msg: UserMessage): TaskRecord {
  const now = isoNow();
  return {
    taskId: msg.task_id ?? newUuid(),
    sessionId: msg.session_id ?? newUuid(),
    tenantId: principal.tenantId,
    ownerId: principal.ownerId,
    agent: agentSource,
    status: 'Running',
    version: 0,
    requestCount: 1,
    lastEventSeq: 0,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  };
}

/** The record of a new request at position `seq` of its task, holding the user's message (its id chosen by the caller, e.g. an AG-UI `runId`, or new). */
export function newRequestRecord(task: TaskRecord, principal: Principal, msg: UserMessage, seq: number, requestId?: string): RequestRecord {
  const now = isoNow();
  return {
    requestId: requestId ?? newUuid(),
    taskId: task.taskId,
    sessionId: task.sessionId,
    tenantId: principal.tenantId,
    ownerId: principal.ownerId,
    seq,
    status: 'Running',
    // Made frozen (strings inside): the writer seals the record without copying them (`frozen`).
    messages: frozen([
      frozen({
        id: newUuid(),
        role: 'user',
        items: frozen(msg.items.map((i) => frozen({ content_type: i.content_type, content: i.content }))),
        created_at: now,
      }),
    ]),
    ...(msg.user_context ? { userContext: msg.user_context } : {}),
    ...(msg.webhook_url !== undefined ? { webhookUrl: msg.webhook_url } : {}),
    toolCalls: frozen([]),
    tokenUsage: frozen(emptyUsage()),
    createdAt: now,
    updatedAt: now,
  };
}
