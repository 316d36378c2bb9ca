import { randomUUID } from 'node:crypto';
import type { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { PausedTurn } from '../invocation/tool-loop';
import type { LlmToolCall } from '../llm/llm-client.port';
import { StateStore } from '../state/state-store';
import { ApprovalDecision, PendingApprovals, RequestRecord, TaskRecord } from '../state/state.entities';
import { VersionConflictError } from '../state/state.errors';
import { expiryFrom, TaskTiming } from './running-task';
import type { StateResponse } from './state-response';

/** `ResumeRequest` (API.md §3), as validated by the controller. */
export interface ResumeDecision {
  action: 'approve' | 'reject';
  decisions?: { tool_call_id: string; approved: boolean }[];
}

type Ids = { task_id: string; session_id: string; request_id: string };

const MAX_ATTEMPTS = 4;

/**
 * Human approval of tool calls in v3 (stateful) requests.
 *
 * Pause: the tool loop stops before a model turn with a call that needs approval (the whole turn
 * waits; src/tools/governance.ts). The request ends `Paused` with that turn stored as its last
 * assistant message and the calls in `pendingApprovals`; the task is `Paused` and its lease
 * released. Nothing else may run on it (a follow-on is 409 TASK_BUSY) until it is decided.
 *
 * Decide: one compare-and-set on the task version turns Paused into Running with the deciding
 * request holding the lease, and records the decision on the request (`approvals`, the audit
 * trail). Two decisions racing (approve vs reject, from any number of processes) read the same
 * version, so exactly one commit succeeds; the other re-reads, finds the pause decided and gets
 * 409 APPROVAL_ALREADY_DECIDED. A decision names the pause it decides (`pauseId`), so a retry
 * never decides a later pause of the same request.
 */
export function pendingApprovalsOf(paused: PausedTurn, now: string): PendingApprovals {
  return {
    pauseId: randomUUID(),
    calls: paused.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
    pending: paused.pending.map((c) => c.id),
    plan: paused.plan,
    requestedAt: now,
  };
}

/** The `HitlResponse` of a paused request, inside its StateResponse (API.md §3). */
export function hitlResponse(agent: AgentDefinition, ids: Ids, p: PendingApprovals): StateResponse {
  const base = `${agent.prefix}/tealagents/v1alpha1/resume/${ids.request_id}`;
  const pending = new Set(p.pending);
  const calls = p.calls.filter((c) => pending.has(c.id));
  const names = [...new Set(calls.map((c) => c.name))].join(', ');
  const message = p.plan
    ? `The agent plans ${p.calls.length} tool calls (${names} need approval); approve or reject the plan as a whole.`
    : `The agent wants to run ${calls.length === 1 ? 'a tool call' : `${calls.length} tool calls`} that need${calls.length === 1 ? 's' : ''} your approval: ${names}.`;
  return {
    ...ids,
    status: 'Paused',
    content: {
      ...ids,
      message,
      approval_url: `${base}?action=approve`,
      rejection_url: `${base}?action=reject`,
      tool_calls: calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
      plan: p.plan,
    },
  };
}

/**
 * Which pending calls a decision approves. `decisions` resolve calls one by one; `action` resolves
 * every pending call the decisions do not name. A plan is decided as a whole: decisions that split
 * it are refused. The calls that needed no approval always run (unless the whole turn is a plan).
 */
export function resolveDecision(p: PendingApprovals, body: ResumeDecision): { approved: string[]; rejected: string[] } {
  const pending = new Set(p.pending);
  const byId = new Map<string, boolean>();
  const errors: { field: string; message: string }[] = [];
  (body.decisions ?? []).forEach((d, i) => {
    if (!pending.has(d.tool_call_id)) errors.push({ field: `decisions[${i}].tool_call_id`, message: `${d.tool_call_id} is not a call waiting for approval` });
    else if (byId.has(d.tool_call_id) && byId.get(d.tool_call_id) !== d.approved) {
      errors.push({ field: `decisions[${i}]`, message: `${d.tool_call_id} is both approved and rejected` });
    } else byId.set(d.tool_call_id, d.approved);
  });
  const verdict = (id: string) => byId.get(id) ?? body.action === 'approve';
  if (p.plan && new Set(p.pending.map(verdict)).size > 1) {
    errors.push({ field: 'decisions', message: 'this turn is one plan: approve or reject all of its calls together' });
  }
  if (errors.length) throw new DomainError(ErrorCode.VALIDATION_FAILED, 'The decision does not fit the pending calls', { errors });
  const approved: string[] = [];
  const rejected: string[] = [];
  for (const c of p.calls) (!pending.has(c.id) || verdict(c.id) ? approved : rejected).push(c.id);
  return { approved, rejected };
}

export interface TakenDecision {
  task: TaskRecord;
  /** The request, Running again under the task's lease, with the decision recorded. */
  request: RequestRecord;
  /** The task's earlier requests (for the model's conversation). */
  earlier: RequestRecord[];
  decision: ApprovalDecision;
  /** What the tool loop resumes with. */
  resume: { calls: LlmToolCall[]; approved: ReadonlySet<string> };
}

/** Decides a paused request in one compare-and-set (see above). 404/401/409/422 before anything is written. */
export async function takeDecision(
  store: StateStore,
  agent: AgentDefinition,
  principal: Principal,
  requestId: string,
  body: ResumeDecision,
  timing: TaskTiming,
): Promise<TakenDecision> {
  let seenPause: string | undefined;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const first = await store.getRequest(principal.tenantId, requestId);
    if (!first) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${requestId}`);
    const task = await store.getTask(principal.tenantId, first.taskId);
    if (!task || task.agent !== agent.source) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${requestId}`);
    // Read again after the task: a decision writes both in one commit, so this read is at least as
    // new as the task just read (a stale "Paused" request beside a decided task would say 409 not paused).
    const request = (await store.getRequest(principal.tenantId, requestId)) ?? first;
    if (task.ownerId !== principal.ownerId || request.ownerId !== principal.ownerId) {
      throw new DomainError(ErrorCode.NOT_OWNER, 'This task belongs to another user');
    }
    const p = request.pendingApprovals;
    const decidedMeanwhile = seenPause !== undefined && p?.pauseId !== seenPause;
    if (request.status !== 'Paused' || !p || task.status !== 'Paused' || decidedMeanwhile) {
      if (request.approvals?.length || decidedMeanwhile) {
        throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `Request ${requestId} was already decided (status ${request.status})`);
      }
      throw new DomainError(ErrorCode.TASK_NOT_PAUSED, `Request ${requestId} is not waiting for a decision (status ${request.status})`);
    }
    seenPause = p.pauseId;
    const { approved, rejected } = resolveDecision(p, body);
    const now = new Date();
    const decision: ApprovalDecision = {
      pauseId: p.pauseId,
      action: body.action,
      approved,
      rejected,
      decidedBy: principal.ownerId,
      decidedAt: now.toISOString(),
    };
    const next: RequestRecord = { ...request, status: 'Running', approvals: [...(request.approvals ?? []), decision], updatedAt: decision.decidedAt };
    delete next.pendingApprovals;
    const nextTask: TaskRecord = {
      ...task,
      status: 'Running',
      lease: { requestId, expiresAt: now.getTime() + timing.leaseMs },
      updatedAt: decision.decidedAt,
    };
    const expiresAt = expiryFrom(timing, now.getTime());
    if (expiresAt) nextTask.expiresAt = expiresAt;
    try {
      const stored = await store.commit(principal.tenantId, { task: nextTask, expectedVersion: task.version, requests: [next] });
      const earlier = (await store.listRequests(principal.tenantId, task.taskId)).filter((r) => r.seq < request.seq);
      return { task: stored, request: next, earlier, decision, resume: { calls: p.calls, approved: new Set(approved) } };
    } catch (err) {
      if (!(err instanceof VersionConflictError)) throw err;
      // Someone wrote first: most likely the other decision. Look again.
    }
  }
  throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `Request ${requestId} changed while deciding; it was decided elsewhere`);
}

/** `pending_approvals` of GET /tasks/{id}: the calls of the paused request waiting for a decision. */
export function pendingApprovalsView(agent: Pick<AgentDefinition, 'prefix'>, requests: RequestRecord[]) {
  return requests
    .filter((r) => r.status === 'Paused' && r.pendingApprovals)
    .map((r) => {
      const p = r.pendingApprovals!;
      const pending = new Set(p.pending);
      const base = `${agent.prefix}/tealagents/v1alpha1/resume/${r.requestId}`;
      return {
        request_id: r.requestId,
        plan: p.plan,
        requested_at: p.requestedAt,
        approval_url: `${base}?action=approve`,
        rejection_url: `${base}?action=reject`,
        tool_calls: p.calls.filter((c) => pending.has(c.id)).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
      };
    });
}
