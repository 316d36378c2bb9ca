import type { ResumeEntry } from '@ag-ui/core';
import type { ResumeDecision } from '../../tasks/lifecycle/decide';
import { invalid } from './new-turn';

/**
 * AG-UI resume entries as the v3 decision on one pause (`POST .../resume/{request_id}`'s body).
 * Every interrupt of a pause has the pause's id (one per pending call), so the entries name one
 * pause. An entry decides `approved` (`status: "resolved"`, `payload.approved`: a boolean, required)
 * or rejects (`status: "cancelled"`); with `payload.toolCallId` it decides that call only (the
 * per-call decisions), without it every pending call no other entry names. `payload.reason` is the
 * reason shown to the model for a rejection. Entries that contradict each other are 422.
 */
export function resumeDecisionOf(entries: ResumeEntry[]): ResumeDecision & { pause_id: string } {
  const pauseId = entries[0]!.interruptId;
  const decisions: NonNullable<ResumeDecision['decisions']> = [];
  let action: ResumeDecision['action'];
  let reason: string | undefined;
  entries.forEach((e, i) => {
    const payload = (e.payload ?? {}) as { approved?: unknown; toolCallId?: unknown; reason?: unknown };
    if (e.status === 'resolved' && typeof payload.approved !== 'boolean') {
      throw invalid(`resume[${i}].payload.approved`, 'a resolved approval interrupt needs payload.approved: true or false');
    }
    const approved = e.status === 'resolved' && payload.approved === true;
    const why = typeof payload.reason === 'string' ? payload.reason.slice(0, 2000) : undefined;
    if (typeof payload.toolCallId === 'string') {
      decisions.push({ tool_call_id: payload.toolCallId, approved, ...(why && !approved ? { reason: why } : {}) });
      return;
    }
    const verdict = approved ? 'approve' : 'reject';
    if (action && action !== verdict) throw invalid(`resume[${i}]`, 'the entries both approve and reject the same pending calls');
    action = verdict;
    reason ??= why;
  });
  return { pause_id: pauseId, ...(action ? { action } : {}), ...(reason ? { reason } : {}), ...(decisions.length ? { decisions } : {}) };
}
