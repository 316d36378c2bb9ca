import type { AgentDefinition } from '../../agents/config/agent-definition';
import { RequestRecord, StoredMessage, TaskRecord } from '../../state/state.entities';
import { leaseActive } from '../lifecycle/lease';
import { deliveriesByRequest, DeliveryView } from './delivery-view';
import { pendingApprovalsView } from './request-response';

/** The public JSON of a task (`GET /tasks/{task_id}`), snake_case like the rest of the API. */
export function taskView(task: TaskRecord, requests: RequestRecord[], agent: Pick<AgentDefinition, 'prefix'>, now: number) {
  const webhooks = deliveriesByRequest(task.outbox);
  return {
    task_id: task.taskId,
    session_id: task.sessionId,
    agent: task.agent,
    status: task.status,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
    expires_at: task.expiresAt ?? null,
    version: task.version,
    metadata: task.metadata,
    running_request_id: task.lease && leaseActive(task, now) ? task.lease.requestId : null,
    requests: requests.map((r) => requestView(r, webhooks.get(r.requestId))),
    /** The tool calls of the paused request waiting for a decision (empty unless the task is Paused). */
    pending_approvals: pendingApprovalsView(agent, requests),
  };
}

/** `webhooks`: the request's deliveries in the task's outbox; the key is left out when it has none (an agent without webhooks shows no trace of them). */
export function requestView(r: RequestRecord, webhooks?: DeliveryView[]) {
  return {
    request_id: r.requestId,
    seq: r.seq,
    status: r.status,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    user_context: r.userContext ?? null,
    messages: r.messages.map(messageView),
    tool_calls: r.toolCalls,
    token_usage: r.tokenUsage,
    output: r.output ?? null,
    error: r.error ?? null,
    reason: r.reason ?? null,
    // What the model received of the history (null when the request failed or was canceled, or ran before this was recorded).
    model_input_messages: r.modelInput?.messages ?? null,
    history_truncated: r.modelInput?.truncated ?? false,
    history_summarized: r.modelInput?.summarized ?? false,
    history_omitted_messages: r.modelInput?.omittedMessages ?? 0,
    approvals: (r.approvals ?? []).map((a) => ({
      pause_id: a.pauseId,
      action: a.action,
      approved: a.approved,
      rejected: a.rejected,
      decided_by: a.decidedBy,
      decided_at: a.decidedAt,
      reason: a.reason ?? null,
      reasons: a.reasons ?? {},
    })),
    ...(webhooks ? { webhooks } : {}),
  };
}

function messageView(m: StoredMessage) {
  return m;
}

export function taskSummaryView(task: TaskRecord) {
  return {
    task_id: task.taskId,
    session_id: task.sessionId,
    agent: task.agent,
    status: task.status,
    request_count: task.requestCount,
    created_at: task.createdAt,
    updated_at: task.updatedAt,
  };
}
