import type { ProblemDetails } from '../../common/errors/problem-details';
import type { InvokeResponse } from '../../invocation/invoke-response';
import type { ResumeDecision } from '../../tasks/lifecycle/decide';
import type { StateResponse } from '../../tasks/views/state-response';

/**
 * The MCP tool results of our answers (docs/mcp.md), pure so each mapping has a spec: the text a
 * model reads in `content`, the same facts as `structuredContent` for programs. Shapes follow the
 * SDK's `CallToolResult` without importing it (the SDK is loaded on the first MCP request only).
 */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** A pending call of a pause, as `send_message` and `decide` name it. */
export interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  risk: string | null;
  approval_reason: string | null;
}

/** The pause a Paused result names, and what an elicitation about it needs. */
export interface PauseFacts {
  task_id: string;
  session_id: string;
  request_id: string;
  pause_id: string;
  expires_at: string | null;
  pending_calls: PendingCall[];
}

/** A v3 turn's outcome (a StateResponse) as the result of `send_message` or `decide`. */
export function turnResult(response: StateResponse): ToolResult {
  const ids = { task_id: response.task_id, session_id: response.session_id, request_id: response.request_id };
  const content = response.content as Record<string, unknown>;
  switch (response.status) {
    case 'Completed': {
      const output = String(content.output ?? '');
      return { content: [{ type: 'text', text: output }], structuredContent: { status: 'Completed', ...ids, output } };
    }
    case 'Paused':
      return pauseResult(pauseOf(response));
    default: {
      const reason = String(content.reason ?? 'canceled');
      const message = String(content.message ?? 'The request was canceled');
      return { content: [{ type: 'text', text: `Canceled (${reason}): ${message}` }], structuredContent: { status: 'Canceled', ...ids, reason, message } };
    }
  }
}

/** A request that waits its turn behind a running one (`on_busy: enqueue`): its ids, to read it later with `get_task`. */
export function queuedResult(ids: { task_id: string; session_id: string; request_id: string }): ToolResult {
  const text = `Queued behind the task's running request; read it later with get_task (task_id ${ids.task_id}).`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { status: 'Queued', task_id: ids.task_id, session_id: ids.session_id, request_id: ids.request_id },
  };
}

/** The facts of a Paused StateResponse (its HitlResponse). */
export function pauseOf(response: StateResponse): PauseFacts {
  const hitl = response.content as Record<string, unknown>;
  const calls = (hitl.tool_calls as Record<string, unknown>[] | undefined) ?? [];
  return {
    task_id: response.task_id,
    session_id: response.session_id,
    request_id: response.request_id,
    pause_id: String(hitl.pause_id),
    expires_at: (hitl.expires_at as string | null | undefined) ?? null,
    pending_calls: calls.map((c) => ({
      id: String(c.id),
      name: String(c.name),
      arguments: String(c.arguments ?? ''),
      risk: (c.risk as string | null | undefined) ?? null,
      approval_reason: (c.approval_reason as string | null | undefined) ?? null,
    })),
  };
}

/** A pause as a result: the pending calls, and the `decide` call that answers it. */
export function pauseResult(pause: PauseFacts): ToolResult {
  const text = [
    `Paused: ${describeCalls(pause.pending_calls)} ${pause.pending_calls.length === 1 ? 'needs' : 'need'} approval.`,
    `Call decide with task_id "${pause.task_id}", pause_id "${pause.pause_id}" and action "approve" or "reject".`,
  ].join(' ');
  return {
    content: [{ type: 'text', text }],
    structuredContent: {
      status: 'Paused',
      ...pause,
      decide: { tool: 'decide', arguments: { task_id: pause.task_id, pause_id: pause.pause_id, action: 'approve | reject' } },
    },
  };
}

/** A stateless (v1/v2) answer: nothing is kept, so there is no task. */
export function statelessResult(response: InvokeResponse): ToolResult {
  const output = response.output_raw ?? '';
  return {
    content: [{ type: 'text', text: output }],
    structuredContent: { status: 'Completed', session_id: response.session_id, request_id: response.request_id, output },
  };
}

/** `get_task`: the task as `GET /tasks/{task_id}` answers it, as JSON text and structured content. */
export function taskResult(view: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(view) }], structuredContent: view };
}

/** A refusal or failure as a tool error carrying our code (the problem details a REST call would answer). */
export function errorResult(problem: ProblemDetails): ToolResult {
  return {
    content: [{ type: 'text', text: `${problem.code}: ${problem.detail}` }],
    structuredContent: { ...problem },
    isError: true,
  };
}

/** `elicitation/create` params asking the person behind the client to decide a pause (a flat form, as elicitation allows). */
export function elicitationOf(pause: PauseFacts) {
  return {
    mode: 'form' as const,
    message: `Approve ${describeCalls(pause.pending_calls)}?${pause.expires_at ? ` (undecided, the pause expires at ${pause.expires_at})` : ''}`,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        decision: { type: 'string' as const, title: 'Decision', enum: ['approve', 'reject'], description: 'Run the calls, or refuse them' },
        reason: { type: 'string' as const, title: 'Reason', description: 'Why (kept with the decision)' },
      },
      required: ['decision'],
    },
  };
}

/**
 * The decision an elicitation's answer stands for: `accept` with a decision decides the pause it
 * was about; `decline` and `cancel` (or anything else) decide nothing, so the pause stays open for
 * `decide` or the REST resume.
 */
export function decisionOfElicitation(answer: unknown, pauseId: string): ResumeDecision | undefined {
  if (!isRecord(answer) || answer.action !== 'accept' || !isRecord(answer.content)) return undefined;
  const { decision, reason } = answer.content;
  if (decision !== 'approve' && decision !== 'reject') return undefined;
  return { action: decision, pause_id: pauseId, ...(typeof reason === 'string' && reason.trim() ? { reason: reason.trim() } : {}) };
}

function describeCalls(calls: PendingCall[]): string {
  return calls.map((c) => `${c.name}(${c.arguments})${c.risk ? ` [${c.risk}]` : ''}`).join(', ') || 'the pending calls';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
