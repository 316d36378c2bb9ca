import { ApprovalDecision, RequestRecord, StoredItem, StoredMessage, ToolCallTrace } from '../../state/state.entities';
import { paused } from './admit';
import { TaskTiming, withLease } from './lease';
import { checkSession, TaskState, Transition } from './transition';
import { isoTime } from '../../common/time/iso-time';

export interface RefineInput {
  /** The message's content, added to the conversation after the refused calls. */
  items: StoredItem[];
  /** Its text (the items' text joined), kept as the refinement's reason. */
  text: string;
  /** The session the caller named, if any: it must be the task's. */
  sessionId?: string;
  refinedBy: string;
  /** Mints the ids of the stored messages (transitions hold no randomness). */
  mint: () => string;
  timing: TaskTiming;
}

export interface Refined {
  decision: ApprovalDecision;
  /** The paused request, Running again under the lease, its conversation ending with the message. */
  request: RequestRecord;
}

/**
 * `spec.governance.on_paused: refine` — a new message while a pause waits refines the plan instead of
 * being refused: in one compare-and-set, every call of the waiting turn is answered as refused
 * (`rejected` for the pending ones, `canceled` for the others; the model reads why, with the
 * message's text), the message is added after them, the refinement is recorded on the pause
 * (`approvals[]`, action `refine`: the archive's `plan_refined`), and the request runs again under
 * the lease, so the model plans again in the same request. A task that is not paused is left to
 * the ordinary follow-on (the caller tries that first); a pause decided meanwhile loses the race
 * and the caller's message is answered as a follow-on would be.
 */
export function refine(input: RefineInput): Transition<Refined> {
  return {
    reads: 'all',
    apply(state: TaskState, now: number) {
      const { task } = state;
      checkSession(task, input.sessionId);
      const request = [...state.requests].reverse().find((r) => r.status === 'Paused');
      const p = request?.pendingApprovals;
      if (task.status !== 'Paused' || !request || !p) throw paused(task);
      const at = isoTime(now);
      const decision: ApprovalDecision = {
        pauseId: p.pauseId,
        action: 'refine',
        approved: [],
        rejected: p.pending,
        decidedBy: input.refinedBy,
        decidedAt: at,
        reason: input.text,
      };
      const traces: ToolCallTrace[] = p.calls.map((c) => {
        const outcome = p.pending.includes(c.id) ? 'rejected' : 'canceled';
        return { id: c.id, name: c.name, arguments: c.arguments, started_at: at, duration_ms: 0, outcome, result: refinedResult(c.name, input.text) };
      });
      const answers: StoredMessage[] = traces.map((t) => ({
        id: input.mint(),
        role: 'tool',
        tool_call_id: t.id,
        content: t.result!,
        is_error: true,
        created_at: at,
      }));
      const message: StoredMessage = { id: input.mint(), role: 'user', items: input.items, created_at: at };
      const next: RequestRecord = {
        ...request,
        status: 'Running',
        messages: [...request.messages, ...answers, message],
        toolCalls: [...request.toolCalls, ...traces],
        approvals: [...(request.approvals ?? []), decision],
        updatedAt: at,
      };
      delete next.pendingApprovals;
      const leased = withLease({ ...task, status: 'Running' }, request.requestId, now, input.timing);
      delete leased.pauseExpiresAt;
      return { task: leased, requests: [next], result: { decision, request: next } };
    },
  };
}

/** What the model reads for a call the user answered with a new message instead of a decision. */
export function refinedResult(name: string, text: string): string {
  return `Error: the user did not approve this call of ${name}; it did not run. Instead they refined the plan: "${text}". Plan again from their message.`;
}
