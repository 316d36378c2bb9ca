import { DomainError, FieldError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { rejectedResult } from '../../tools/governance';
import { ApprovalDecision, PendingApprovals, RequestRecord, StoredToolCall, ToolCallTrace } from '../../state/state.entities';
import { endPause } from './cancel';
import { TaskTiming, withLease } from './lease';
import { findRequest, Transition } from './transition';
import { isoTime } from '../../common/time/iso-time';

/** `ResumeRequest` (API.md §3), as validated by the controller (the URL's query filled in). */
export interface ResumeDecision {
  action?: 'approve' | 'reject';
  pause_id?: string;
  reason?: string;
  decisions?: { tool_call_id: string; approved: boolean; reason?: string }[];
  /** Results of pending client-side tool calls (AG-UI), by call id: each such call is decided as done. */
  results?: Record<string, string>;
}

/** What the tool loop resumes with: the turn's calls, those that run, and why the others did not. */
export interface ResumePlan {
  calls: StoredToolCall[];
  approved: string[];
  /** Reasons given for rejected calls, by id. */
  reasons: Record<string, string>;
  /** The caller's results of client-side tool calls, by id (those calls do not run here). */
  provided?: Record<string, string>;
}

export type Decided =
  /** Approved (wholly or in part): the request runs on under the lease. */
  | { kind: 'resumed'; decision: ApprovalDecision; request: RequestRecord; resume: ResumePlan }
  /** Every pending call rejected: the request and the task end Canceled (`rejected`); no model call follows. */
  | { kind: 'rejected'; decision: ApprovalDecision; request: RequestRecord };

export interface DecisionInput {
  requestId: string;
  body: ResumeDecision;
  decidedBy: string;
  timing: TaskTiming;
}

/**
 * A decision on the current pause of a paused request, in one compare-and-set: of two racing
 * decisions (from any replicas) exactly one applies; the other re-reads and finds the pause
 * decided (409 APPROVAL_ALREADY_DECIDED). A decision that names a pause (`pause_id`) decides only
 * that pause, so a retried or double-clicked decision never decides a later pause of the request;
 * one that names none decides the current pause (clients of the Python service send only `action`).
 */
export function decide(input: DecisionInput): Transition<Decided> {
  return {
    reads: () => [input.requestId],
    apply(state, now) {
      const request = findRequest(state, input.requestId);
      if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${input.requestId}`);
      const p = request.pendingApprovals;
      if (request.status !== 'Paused' || !p || state.task.status !== 'Paused') throw notPaused(request);
      const named = input.body.pause_id;
      if (named !== undefined && named !== p.pauseId) {
        const earlier = request.approvals?.some((a) => a.pauseId === named);
        throw new DomainError(
          ErrorCode.APPROVAL_ALREADY_DECIDED,
          earlier
            ? `Pause ${named} of request ${request.requestId} was already decided`
            : `Pause ${named} is not the pause request ${request.requestId} waits on`,
        );
      }
      const { approved, rejected, reasons } = resolveDecision(p, withResults(p, input.body));
      const decision: ApprovalDecision = {
        pauseId: p.pauseId,
        action: input.body.action ?? (approved.some((id) => p.pending.includes(id)) ? 'approve' : 'reject'),
        approved,
        rejected,
        decidedBy: input.decidedBy,
        decidedAt: isoTime(now),
        ...(input.body.reason ? { reason: input.body.reason } : {}),
        ...(Object.keys(reasons).length ? { reasons } : {}),
      };
      const approvals = [...(request.approvals ?? []), decision];
      if (!p.pending.some((id) => approved.includes(id))) {
        const trace = p.calls.map((c) => notRunTrace(c, p.pending.includes(c.id) ? 'rejected' : 'canceled', reasons[c.id] ?? input.body.reason, now));
        const change = endPause(state, 'rejected', now, input.timing, (r) => ({ ...r, approvals, toolCalls: [...r.toolCalls, ...trace] }));
        const stored = change!.requests[0]!;
        return { ...change!, result: { kind: 'rejected', decision, request: stored } };
      }
      const next: RequestRecord = { ...request, status: 'Running', approvals, updatedAt: decision.decidedAt };
      delete next.pendingApprovals;
      const task = withLease({ ...state.task, status: 'Running' }, request.requestId, now, input.timing);
      delete task.pauseExpiresAt;
      const resume: ResumePlan = {
        calls: p.calls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a })),
        approved,
        reasons,
        ...(input.body.results ? { provided: input.body.results } : {}),
      };
      return { task, requests: [next], result: { kind: 'resumed', decision, request: next, resume } };
    },
  };
}

/**
 * Client-side tool results decide their calls as approved (done by the caller). Only a call the
 * pause waits on as a client-side tool's (`approvalReason: 'client_tool'`) takes a result: for a
 * call waiting for approval, a result would stand in for the tool's output and approve it with
 * nobody deciding, so it is refused (409 NOT_A_CLIENT_TOOL_CALL) and the pause stays as it was.
 * A result for a call that is not pending at all stays 409 APPROVAL_ALREADY_DECIDED (resolveDecision).
 */
function withResults(p: PendingApprovals, body: ResumeDecision): ResumeDecision {
  if (!body.results) return body;
  const ids = Object.keys(body.results);
  const awaitingApproval = ids.filter((id) => p.pending.includes(id) && p.calls.find((c) => c.id === id)?.approvalReason !== 'client_tool');
  if (awaitingApproval.length) {
    const names = awaitingApproval.map((id) => `${id} (${p.calls.find((c) => c.id === id)?.name ?? 'unknown tool'})`).join(', ');
    throw new DomainError(
      ErrorCode.NOT_A_CLIENT_TOOL_CALL,
      `Not a client-side tool call: ${names} waits for approval in pause ${p.pauseId}, not for a result; approve or reject it with a resume`,
    );
  }
  return { ...body, decisions: [...(body.decisions ?? []), ...ids.map((id) => ({ tool_call_id: id, approved: true }))] };
}

function notPaused(request: RequestRecord): DomainError {
  if (request.reason === 'expired') {
    return new DomainError(ErrorCode.APPROVAL_EXPIRED, `The pause of request ${request.requestId} expired before it was decided`);
  }
  if (request.approvals?.length) {
    return new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `Request ${request.requestId} was already decided (status ${request.status})`);
  }
  return new DomainError(ErrorCode.TASK_NOT_PAUSED, `Request ${request.requestId} is not waiting for a decision (status ${request.status})`);
}

/**
 * Which calls of a pause a decision approves. `decisions` resolve calls one by one; `action`
 * resolves every pending call they do not name (without `action` they must name them all). A plan
 * is decided as a whole. The calls that needed no approval run when anything is approved. A
 * decision about a call that is not pending in this pause (stale, of another pause) is 409; a body
 * that contradicts itself or the plan is 422.
 */
export function resolveDecision(p: PendingApprovals, body: ResumeDecision): { approved: string[]; rejected: string[]; reasons: Record<string, string> } {
  const pending = new Set(p.pending);
  const byId = new Map<string, boolean>();
  const reasons: Record<string, string> = {};
  const errors: FieldError[] = [];
  (body.decisions ?? []).forEach((d, i) => {
    if (!pending.has(d.tool_call_id)) {
      throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `${d.tool_call_id} is not a call waiting for approval in pause ${p.pauseId}`);
    }
    if (byId.has(d.tool_call_id) && byId.get(d.tool_call_id) !== d.approved) {
      errors.push({ field: `decisions[${i}]`, message: `${d.tool_call_id} is both approved and rejected` });
    } else byId.set(d.tool_call_id, d.approved);
    if (!d.approved && d.reason) reasons[d.tool_call_id] = d.reason;
  });
  const undecided = p.pending.filter((id) => !byId.has(id));
  if (undecided.length && !body.action) {
    errors.push({ field: 'action', message: `no decision for ${undecided.join(', ')}: name them in decisions or give an action` });
  }
  const verdict = (id: string) => byId.get(id) ?? body.action === 'approve';
  if (p.plan && new Set(p.pending.map(verdict)).size > 1) {
    errors.push({ field: 'decisions', message: 'this turn is one plan: approve or reject all of its calls together' });
  }
  if (errors.length) throw new DomainError(ErrorCode.VALIDATION_FAILED, 'The decision does not fit the pending calls', { errors });
  const approved: string[] = [];
  const rejected: string[] = [];
  for (const c of p.calls) (!pending.has(c.id) || verdict(c.id) ? approved : rejected).push(c.id);
  if (body.reason) for (const id of rejected) reasons[id] ??= body.reason;
  return { approved, rejected, reasons };
}

function notRunTrace(c: StoredToolCall, outcome: 'rejected' | 'canceled', reason: string | undefined, now: number): ToolCallTrace {
  const result = outcome === 'rejected' ? rejectedResult(c, reason) : `Not run: the other calls of its turn were rejected.`;
  return { id: c.id, name: c.name, arguments: c.arguments, started_at: isoTime(now), duration_ms: 0, outcome, result };
}
