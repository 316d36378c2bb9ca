/**
 * A task's timeline as the console shows it: one line per event of `GET …/tasks/{task_id}/events`
 * (docs/archive.md), summarized from its payload (src/archive/archive-events.ts writes them).
 */
import type { TimelineEvent } from './console.types';

/** What a line of text may show of a longer one (arguments, results, messages). */
const CLIP = 80;

function clip(text: unknown, max = CLIP): string {
  const s = (typeof text === 'string' ? text : text === undefined || text === null ? '' : JSON.stringify(text)).replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** `HH:MM:SS.mmm` (UTC) of an ISO time; the whole time is the line's tooltip. */
export function timeOf(at: string | null | undefined): string {
  return at ? at.slice(11, 23) : '';
}

function tokens(usage: Record<string, number> | undefined): string | undefined {
  if (!usage) return undefined;
  const total = usage.total_tokens ?? (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0);
  return `${total} tokens`;
}

/** One line saying what the event was: the tool and its outcome, the decision and its reason, the plan's size and risk, the model call's cost. */
export function summarize(e: TimelineEvent): string {
  const p = e.payload ?? {};
  const parts = (...xs: (string | false | undefined | null)[]) => xs.filter(Boolean).join(' · ');
  switch (e.type) {
    case 'request_accepted':
      return clip(
        (p.items ?? []).map((i: { content_type: string; content: string }) => (i.content_type === 'text' ? i.content : `[${i.content_type}]`)).join(' '),
      );
    case 'model_call':
      return parts(p.model, tokens(p.usage), p.duration_ms !== undefined && `${p.duration_ms} ms`, p.finish_reason);
    case 'plan_proposed': {
      const steps: { name: string }[] = p.steps ?? [];
      return parts(plural(steps.length, 'step'), p.max_risk && `max risk ${p.max_risk}`, p.plan && 'one plan', clip(steps.map((s) => s.name).join(', ')));
    }
    case 'decision': {
      const reasons = Object.values((p.reasons ?? {}) as Record<string, string>);
      const reason = p.reason ?? (reasons.length ? reasons.join('; ') : undefined);
      const counts = parts(
        (p.approved ?? []).length && `${(p.approved ?? []).length} approved`,
        (p.rejected ?? []).length && `${(p.rejected ?? []).length} rejected`,
      );
      return parts(p.action, counts, reason && `“${clip(reason)}”`);
    }
    case 'plan_refined':
      return parts('refined', (p.text ?? p.reason) && `“${clip(p.text ?? p.reason)}”`);
    case 'approval_expired':
      return 'the pause expired';
    case 'tool_call_started':
      return `${p.name}(${clip(p.arguments, 60)})`;
    case 'tool_call_completed':
    case 'tool_call_failed':
      return parts(`${p.name} → ${p.outcome}`, p.duration_ms !== undefined && `${p.duration_ms} ms`, p.result && clip(p.result, 60));
    case 'request_completed':
      return parts(tokens(p.token_usage), p.output && clip(p.output, 60));
    case 'request_failed':
      return parts(p.reason, p.error?.message && clip(p.error.message));
    case 'request_canceled':
      return p.reason ?? 'canceled';
    case 'edit':
      return `replaces request #${p.edits_seq}`;
    case 'fork':
      return parts(`from task ${String(p.from_task_id ?? '').slice(0, 8)}`, p.requests !== undefined && plural(p.requests, 'request'));
    case 'task_deleted':
      return p.by ? `by ${p.by}` : '';
    case 'session_deleted':
      return p.tasks !== undefined ? plural(p.tasks, 'task') : '';
    default:
      return clip(p);
  }
}

/** The events whose outcome went wrong are shown in red. */
export function failed(e: TimelineEvent): boolean {
  return e.type === 'tool_call_failed' || e.type === 'request_failed';
}
