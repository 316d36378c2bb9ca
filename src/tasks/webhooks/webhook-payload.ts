import type { AgentDefinition } from '../../agents/config/agent-definition';
import { maxRisk } from '../../archive/archive-events';
import { RequestRecord, TaskRecord, WebhookDelivery } from '../../state/state.entities';
import { approvalUrls, pendingCallsView } from '../views/request-response';

/**
 * The JSON a delivery POSTs (docs/webhooks.md, "Events"), in the Standard Webhooks shape `{type,
 * timestamp, data}`: built from the stored records when it is sent, the same on every attempt
 * (an ended request no longer changes; a pause is found again by its id among the request's).
 * `data` carries the tenant, task, session and request ids, and what the event is about: the
 * output and token usage of a completed request, the error of a failed one, the reason of a
 * canceled one, or the pending calls of a pause with their risk and where to decide them.
 */
export function webhookPayload(agent: Pick<AgentDefinition, 'prefix' | 'source'>, task: TaskRecord, request: RequestRecord, delivery: WebhookDelivery) {
  const data: Record<string, unknown> = {
    tenant_id: task.tenantId,
    task_id: task.taskId,
    session_id: request.sessionId,
    request_id: request.requestId,
    agent: agent.source,
    status: request.status,
  };
  if (delivery.event === 'request.completed') Object.assign(data, { output: request.output ?? '', token_usage: request.tokenUsage });
  if (delivery.event === 'request.failed') Object.assign(data, { error: request.error ?? null, reason: request.reason ?? 'failed' });
  if (delivery.event === 'request.canceled') data.reason = request.reason ?? 'canceled';
  if (delivery.event === 'approval.required' || delivery.event === 'approval.expired') {
    const pause = [...(request.pauses ?? []), ...(request.pendingApprovals ? [request.pendingApprovals] : [])].find((p) => p.pauseId === delivery.pauseId);
    data.pause_id = delivery.pauseId ?? null;
    if (pause) {
      Object.assign(data, {
        plan: pause.plan,
        tool_calls: pendingCallsView(pause),
        max_risk: maxRisk(pause) ?? null,
        autonomy_level: pause.autonomyLevel ?? null,
        expires_at: pause.expiresAt ?? null,
      });
      if (delivery.event === 'approval.required') Object.assign(data, approvalUrls(agent, request.requestId, pause.pauseId));
    }
  }
  return { type: delivery.event, timestamp: new Date(delivery.createdAt).toISOString(), data };
}
