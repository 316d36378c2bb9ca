import type { AgentDefinition } from '../../agents/config/agent-definition';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { PendingApprovals, RequestRecord } from '../../state/state.entities';
import { extraDataOf } from '../../invocation/invoke-response';
import { StateResponse } from './state-response';

type Ids = { task_id: string; session_id: string; request_id: string };
type Agent = Pick<AgentDefinition, 'prefix' | 'source'>;

export function idsOf(r: Pick<RequestRecord, 'taskId' | 'sessionId' | 'requestId'>): Ids {
  return { task_id: r.taskId, session_id: r.sessionId, request_id: r.requestId };
}

/** A StateResponse, its keys in upstream's declaration order (`session_id` first, unlike the content models). */
export function stateResponse(ids: Ids, status: StateResponse['status'], content: StateResponse['content']): StateResponse {
  return { session_id: ids.session_id, task_id: ids.task_id, request_id: ids.request_id, status, content };
}

/**
 * The one mapping from a stored request to what a client receives: the StateResponse of a
 * request that ended or paused (a HitlResponse inside when Paused), or, for a failed one, the
 * DomainError its problem details are built from. Live runs and outcomes read back from the store
 * (a queued request, a stream replayed on another replica) answer alike.
 */
export function responseOf(agent: Agent, record: RequestRecord): StateResponse {
  const ids = idsOf(record);
  switch (record.status) {
    case 'Completed':
      return stateResponse(ids, 'Completed', {
        ...ids,
        output: record.output ?? '',
        source: agent.source,
        token_usage: record.tokenUsage,
        extra_data: extraDataOf(record.toolCalls),
      });
    case 'Paused':
      return hitlResponse(agent, ids, record.pendingApprovals!);
    case 'Canceled': {
      const reason = record.reason ?? 'canceled';
      return stateResponse(ids, 'Canceled', { ...ids, message: CANCELED_MESSAGES[reason] ?? CANCELED_MESSAGES.canceled, reason });
    }
    case 'Failed':
      throw failureOf(record);
    default:
      throw new DomainError(ErrorCode.INTERNAL, `Request ${record.requestId} has not ended (status ${record.status})`);
  }
}

const CANCELED_MESSAGES: Record<string, string> = {
  canceled: 'The request was canceled',
  superseded: 'Superseded by a newer follow-on',
  // Upstream's `RejectedToolResponse.message` default, verbatim (typo included): clients may compare it.
  rejected: 'Tool excecution rejected.',
  expired: 'The approval expired before it was decided; nothing ran',
};

/** The error of a failed request, with its stored code (an unknown one is INTERNAL); its problem names the request. */
export function failureOf(record: RequestRecord): DomainError {
  const stored = record.error?.code as ErrorCode | undefined;
  const code = stored && Object.values(ErrorCode).includes(stored) ? stored : ErrorCode.INTERNAL;
  return new DomainError(code, record.error?.message ?? `Request ended ${record.status}`, { extensions: idsOf(record) });
}

/**
 * The stream events that tell a request's outcome, as a live stream sends them: `approval-required`
 * before a pause, `cancelled` (with the reason) before a cancel, then `final-response`; a failure
 * is thrown (the stream turns it into its `error` frame).
 */
export function outcomeEvents(agent: Agent, record: RequestRecord): { event: string; data: Record<string, unknown> }[] {
  const response = responseOf(agent, record);
  const final = { event: 'final-response', data: { ...response } };
  if (response.status === 'Paused') return [{ event: 'approval-required', data: { ...response.content } }, final];
  if (response.status === 'Canceled') return [{ event: 'cancelled', data: { ...idsOf(record), reason: record.reason ?? 'canceled' } }, final];
  return [final];
}

/** Where to POST a decision on a pause (absolute paths; the query decides when the body is empty). */
export function approvalUrls(agent: Pick<AgentDefinition, 'prefix'>, requestId: string, pauseId: string) {
  const base = `${agent.prefix}/tealagents/v1alpha1/resume/${requestId}`;
  return { approval_url: `${base}?action=approve&pause_id=${pauseId}`, rejection_url: `${base}?action=reject&pause_id=${pauseId}` };
}

/**
 * The pending calls of a pause, each as Semantic Kernel's `FunctionCallContent.model_dump()` (what
 * upstream's `HitlResponse.tool_calls` holds) plus its risk and why it needs approval. `index` is
 * the call's position in its model turn; we keep no provider object, so `inner_content` and
 * `ai_model_id` are null.
 */
export function pendingCallsView(p: PendingApprovals) {
  const pending = new Set(p.pending);
  return p.calls.flatMap((c, index) =>
    pending.has(c.id) ? [{ ...functionCallContent(c, index), risk: c.risk ?? null, approval_reason: c.approvalReason ?? null }] : [],
  );
}

/**
 * SK's dump, its keys in SK's order. SK names a kernel function `plugin-function` and splits the
 * name at its first `-`; a name without one has no plugin.
 */
function functionCallContent(c: PendingApprovals['calls'][number], index: number) {
  const dash = c.name.indexOf('-');
  return {
    inner_content: null,
    ai_model_id: null,
    metadata: {},
    content_type: 'function_call' as const,
    id: c.id,
    index,
    name: c.name,
    function_name: dash < 0 ? c.name : c.name.slice(dash + 1),
    plugin_name: dash < 0 ? null : c.name.slice(0, dash),
    arguments: c.arguments,
  };
}

/** Upstream's `HitlResponse.message`, verbatim: the pending calls and the plan flag say the rest. */
const HITL_MESSAGE = 'Human intervention required.';

/** The `HitlResponse` of a paused request, inside its StateResponse (API.md §3). */
export function hitlResponse(agent: Pick<AgentDefinition, 'prefix'>, ids: Ids, p: PendingApprovals): StateResponse {
  return stateResponse(ids, 'Paused', {
    ...ids,
    message: HITL_MESSAGE,
    ...approvalUrls(agent, ids.request_id, p.pauseId),
    tool_calls: pendingCallsView(p),
    plan: p.plan,
    pause_id: p.pauseId,
    ...(p.plan ? { plan_id: p.pauseId } : {}),
    autonomy_level: p.autonomyLevel ?? null,
    expires_at: p.expiresAt ?? null,
  });
}

/** `pending_approvals` of GET /tasks/{id}: the pause a request waits on, if any. */
export function pendingApprovalsView(agent: Pick<AgentDefinition, 'prefix'>, requests: RequestRecord[]) {
  return requests
    .filter((r) => r.status === 'Paused' && r.pendingApprovals)
    .map((r) => {
      const p = r.pendingApprovals!;
      return {
        request_id: r.requestId,
        pause_id: p.pauseId,
        plan: p.plan,
        ...(p.plan ? { plan_id: p.pauseId } : {}),
        requested_at: p.requestedAt,
        expires_at: p.expiresAt ?? null,
        ...approvalUrls(agent, r.requestId, p.pauseId),
        tool_calls: pendingCallsView(p),
      };
    });
}
