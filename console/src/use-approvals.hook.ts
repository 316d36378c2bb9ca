/**
 * A person's word on a request already made, each sent as a turn of its own: the decisions on a
 * paused request's calls (approvals-panel.component.tsx), a refinement of the paused plan (a new
 * message sent while it waits), and an edit of a past message to rerun the task from it
 * (user-message.component.tsx).
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import { ApiError, newId, postSse } from './api';
import type { Decision } from './console.types';
import { applyV3Event } from './conversation';
import type { TaskViewState } from './use-task-view.hook';
import type { Turn } from './use-turn.hook';
import type { Editing } from './user-message.component';

export function useApprovals(view: Pick<TaskViewState, 'agent' | 'taskId' | 'pending' | 'setPending' | 'setItems'>, turn: Pick<Turn, 'run'>) {
  const { agent, taskId, pending, setPending, setItems } = view;
  const [decisions, setDecisions] = useState<Record<string, Decision>>({});
  const [editing, setEditing] = useState<Editing>();
  const [refineText, setRefineText] = useState('');
  /** Why the last refinement was refused, by agent prefix: an agent that refused once keeps its note. */
  const [refineRefused, setRefineRefused] = useState<Record<string, string>>({});

  // Decisions answer one pause: a new pause, or the task shown again, starts with none. An edit
  // belongs to the task it was opened on: a new chat or another task drops it.
  useLayoutEffect(() => setDecisions({}), [pending]);
  useLayoutEffect(() => {
    setEditing(undefined);
    setRefineText('');
  }, [taskId]);

  /** Sends every call's decision (and reason) in one streamed resume of the paused request. */
  async function decide(): Promise<void> {
    const a = agent;
    const p = pending;
    if (!a || !p || !taskId) return;
    const body = {
      pause_id: p.pauseId,
      decisions: p.calls.map((c) => ({
        tool_call_id: c.id,
        approved: decisions[c.id]?.approved === true,
        ...(decisions[c.id]?.reason ? { reason: decisions[c.id].reason } : {}),
      })),
    };
    setPending(undefined);
    const id = taskId;
    await turn.run(a, id, (s, signal) =>
      postSse(`${a.prefix}/tealagents/v1alpha1/resume/${encodeURIComponent(p.requestId)}/sse`, body, (e) => applyV3Event(e, s), signal),
    );
  }

  /**
   * Sends a new message to the paused task (the ordinary v3 stream, `POST /{name}/{version}/sse`
   * with the task id): an agent with `spec.governance.on_paused: refine` rejects the waiting calls
   * as `refined` and the model plans again in the same request, whose events follow. Otherwise the
   * server refuses it (409 TASK_PAUSED) before the stream opens, and the pause stays.
   */
  async function refine(): Promise<void> {
    const a = agent;
    const p = pending;
    const text = refineText.trim();
    if (!a || !p || !taskId || !text) return;
    const id = taskId;
    let refused: string | undefined;
    setRefineText('');
    setPending(undefined);
    setItems((xs) => [...xs, { kind: 'user', key: `live:${newId()}`, text }]);
    await turn.run(a, id, async (s, signal) => {
      try {
        await postSse(`${a.prefix}/sse`, { task_id: id, items: [{ content_type: 'text', content: text }] }, (e) => applyV3Event(e, s), signal);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 409)) throw e;
        refused =
          e.body?.code === 'TASK_PAUSED'
            ? 'Refine is not enabled for this agent (its spec.governance.on_paused is not refine): approve or reject the calls instead.'
            : `Refine refused: ${e.message}`;
      }
    });
    // The task read back after the turn shows the pause again; the text is kept to try otherwise.
    const note = refused;
    setRefineRefused(({ [a.prefix]: _, ...r }) => (note ? { ...r, [a.prefix]: note } : r));
    if (note) setRefineText(text);
  }

  /** Replaces the edited message and everything after it, and runs the task again from there. */
  async function rerun(): Promise<void> {
    const a = agent;
    const e = editing;
    if (!a || !e || !taskId || !e.text.trim()) return;
    setEditing(undefined);
    const id = taskId;
    setItems((xs) => {
      const at = xs.findIndex((x) => x.kind === 'user' && x.requestId === e.requestId);
      return [...(at < 0 ? xs : xs.slice(0, at)), { kind: 'user', key: `live:${newId()}`, text: e.text.trim() }];
    });
    await turn.run(a, id, (s, signal) =>
      postSse(
        `${a.prefix}/tasks/${encodeURIComponent(id)}/requests/${encodeURIComponent(e.requestId)}/edit/sse`,
        { items: [{ content_type: 'text', content: e.text.trim() }] },
        (ev) => applyV3Event(ev, s),
        signal,
      ),
    );
  }

  const refineNote = agent ? refineRefused[agent.prefix] : undefined;
  return { decisions, setDecisions, decide, editing, setEditing, rerun, refineText, setRefineText, refine, refineNote };
}
