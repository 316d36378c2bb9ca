import type { SseEvent } from './api';
import type { PendingApprovalView, TaskView } from './console.types';

/** One line of the conversation as the console shows it. */
export type Item =
  | { kind: 'user'; key: string; text: string; requestId?: string }
  | { kind: 'assistant'; key: string; text: string; requestId?: string }
  | { kind: 'tool'; key: string; id: string; name: string; args: string; result?: string; outcome?: string; requestId?: string }
  | { kind: 'notice'; key: string; text: string; tone: 'info' | 'error' };

export interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  risk?: string;
  approval_reason?: string;
}

/** A paused request waiting for the caller's decisions. */
export interface Pending {
  requestId: string;
  pauseId: string;
  plan: boolean;
  calls: PendingCall[];
  expiresAt?: string | null;
}

/** Where a running turn's events go, whichever protocol carries them. */
export interface TurnSink {
  ids(ids: { taskId?: string; sessionId?: string; requestId?: string }): void;
  text(requestId: string | undefined, delta: string): void;
  toolCall(requestId: string | undefined, id: string, name: string, args: string): void;
  toolArgs(id: string, delta: string): void;
  /** Shows the call too when its start was not seen (a stream reattached after it). */
  toolResult(id: string, result: string, outcome?: string, name?: string, requestId?: string): void;
  paused(p: Pending): void;
  notice(text: string, tone?: 'info' | 'error'): void;
  eventId(id: string): void;
}

/** Applies one v3 stream event (docs/api.md, Streaming; docs/tools.md) to the sink. */
export function applyV3Event(e: SseEvent, sink: TurnSink): void {
  const d = e.data;
  if (e.id) sink.eventId(e.id);
  if (d.task_id || d.request_id) sink.ids({ taskId: d.task_id, sessionId: d.session_id, requestId: d.request_id });
  switch (e.event) {
    case 'partial-response':
      sink.text(d.request_id, String(d.output_partial ?? ''));
      break;
    case 'tool-call':
      sink.toolCall(d.request_id, d.tool_call_id, d.name, d.arguments ?? '');
      break;
    case 'tool-result':
      sink.toolResult(d.tool_call_id, typeof d.result === 'string' ? d.result : JSON.stringify(d.result), d.outcome, d.name, d.request_id);
      break;
    case 'approval-required':
      sink.paused(pendingOf(d as PendingApprovalView));
      break;
    case 'queued':
      sink.notice('Queued behind the running request');
      break;
    case 'cancelled':
      sink.notice(`Canceled (${d.reason ?? 'canceled'})`);
      break;
    case 'error':
      sink.notice(`${d.code ?? 'ERROR'}: ${d.detail ?? d.title ?? 'failed'}`, 'error');
      break;
    case 'final-response': {
      if (d.status === 'Completed' && d.content?.output !== undefined) sink.text(d.request_id, '');
      if (d.status === 'Paused') sink.paused(pendingOf(d.content));
      if (d.status === 'Failed') sink.notice(`Failed: ${d.content?.detail ?? d.content?.error?.message ?? ''}`, 'error');
      break;
    }
    // v1/v2 stateless streams: the partials of a Sequential agent's intermediate tasks.
    case 'intermediate-task-response':
      break;
  }
}

function pendingOf(d: PendingApprovalView): Pending {
  return {
    requestId: d.request_id,
    pauseId: d.pause_id,
    plan: Boolean(d.plan),
    expiresAt: d.expires_at,
    calls: (d.tool_calls ?? []).map((c) => ({
      id: (c.id ?? c.tool_call_id)!,
      name: c.name,
      arguments: c.arguments ?? '',
      risk: c.risk ?? undefined,
      approval_reason: c.approval_reason ?? undefined,
    })),
  };
}

/** The whole conversation as stored (`GET /tasks/{task_id}`): requests, messages, tool results. */
export function itemsFromTask(task: TaskView): { items: Item[]; pending?: Pending } {
  const items: Item[] = [];
  const tools = new Map<string, Extract<Item, { kind: 'tool' }>>();
  for (const r of task.requests ?? []) {
    for (const m of r.messages ?? []) {
      if (m.role === 'user') {
        const text = (m.items ?? []).map((i) => (i.content_type === 'image' ? '[image]' : i.content)).join(' ');
        items.push({ kind: 'user', key: m.id, text, requestId: r.request_id });
      } else if (m.role === 'assistant') {
        if (m.content) items.push({ kind: 'assistant', key: m.id, text: m.content, requestId: r.request_id });
        for (const c of m.tool_calls ?? []) {
          const t = { kind: 'tool' as const, key: `${m.id}:${c.id}`, id: c.id, name: c.name, args: c.arguments, requestId: r.request_id };
          tools.set(c.id, t);
          items.push(t);
        }
      } else if (m.role === 'tool') {
        const t = tools.get(m.tool_call_id);
        if (t) {
          t.result = m.content;
          t.outcome = m.is_error ? 'error' : 'ok';
        }
      }
    }
    if (r.status === 'Canceled') items.push({ kind: 'notice', key: `${r.request_id}:c`, text: `Canceled (${r.reason ?? 'canceled'})`, tone: 'info' });
    if (r.status === 'Failed')
      items.push({ kind: 'notice', key: `${r.request_id}:f`, text: `Failed: ${r.error?.message ?? r.error?.code ?? ''}`, tone: 'error' });
  }
  const p = task.pending_approvals?.[0];
  return { items, pending: p ? pendingOf(p) : undefined };
}
