import type { InvokeResponse } from '../../invocation/invoke-response';
import type { TokenUsage } from '../../llm/llm-client.port';

/** What every completion and chunk of one answer shares. */
export interface CompletionHead {
  /** `chatcmpl-{request_id}`. */
  id: string;
  /** Unix seconds. */
  created: number;
  /** The `model` the client named. */
  model: string;
}

/** An answer in the front door's terms: its text, our ids (and the pause) for `metadata`, its usage. */
export interface Answer {
  content: string;
  metadata: Record<string, unknown>;
  usage?: TokenUsage;
}

export function headOf(requestId: string, model: string, now = Date.now()): CompletionHead {
  return { id: `chatcmpl-${requestId}`, created: Math.floor(now / 1000), model };
}

/** `chat.completion`: one choice, `finish_reason: "stop"` (a pause too: the answer is complete until someone decides). */
export function chatCompletion(head: CompletionHead, answer: Answer) {
  return {
    id: head.id,
    object: 'chat.completion' as const,
    created: head.created,
    model: head.model,
    choices: [{ index: 0, message: { role: 'assistant' as const, content: answer.content, refusal: null }, finish_reason: 'stop' as const, logprobs: null }],
    usage: usageOf(answer.usage),
    metadata: answer.metadata,
  };
}

/** OpenAI's usage object from our token_usage (zeros when the request used none, e.g. a decision with no model call). */
export function usageOf(u: TokenUsage | undefined) {
  return { prompt_tokens: u?.prompt_tokens ?? 0, completion_tokens: u?.completion_tokens ?? 0, total_tokens: u?.total_tokens ?? 0 };
}

/** A stateless agent's answer: its text and our ids (a v1/v2 call has a session and a request, no task). */
export function statelessAnswer(r: InvokeResponse): Answer {
  return { content: r.output_raw ?? '', metadata: { session_id: r.session_id, request_id: r.request_id }, usage: r.token_usage };
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  risk: string | null;
  approval_reason: string | null;
}

/**
 * A stateful agent's answer from its StateResponse (the `final-response` data of a stream is the
 * same object). Completed: the output. Paused: a message naming the pending calls and where to
 * approve or reject them, the pause in `metadata`. Canceled: its message and reason.
 */
export function statefulAnswer(r: { task_id: string; session_id: string; request_id: string; status: string; content: object }): Answer {
  const ids = { task_id: r.task_id, session_id: r.session_id, request_id: r.request_id, status: r.status };
  const c = r.content as Record<string, unknown>;
  if (r.status === 'Completed') return { content: String(c.output ?? ''), metadata: ids, usage: c.token_usage as TokenUsage | undefined };
  if (r.status === 'Paused') {
    const calls = (c.tool_calls as PendingCall[] | undefined) ?? [];
    const pause = {
      pause_id: c.pause_id,
      approval_url: c.approval_url,
      rejection_url: c.rejection_url,
      expires_at: c.expires_at ?? null,
      plan: c.plan ?? false,
      pending_calls: calls.map((t) => ({ id: t.id, name: t.name, arguments: t.arguments, risk: t.risk, approval_reason: t.approval_reason })),
    };
    return { content: pauseText(pause), metadata: { ...ids, ...pause } };
  }
  return { content: String(c.message ?? ''), metadata: { ...ids, reason: c.reason ?? null } };
}

/** What a person reads in the chat when the agent waits for approval. */
export function pauseText(p: {
  pause_id: unknown;
  approval_url: unknown;
  rejection_url: unknown;
  pending_calls: { name: string; risk: string | null }[];
}): string {
  const calls = p.pending_calls.map((c) => (c.risk ? `${c.name} (risk: ${c.risk})` : c.name)).join(', ');
  return (
    `Approval required before the agent runs ${calls || 'its next step'} (pause ${String(p.pause_id)}). ` +
    `Approve: POST ${String(p.approval_url)}; reject: POST ${String(p.rejection_url)}.`
  );
}
