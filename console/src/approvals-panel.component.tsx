/**
 * A paused request's calls: approve or reject each (with an optional reason), then submit all at
 * once; or refine: a new message instead of decisions (the model plans again, when the agent allows it).
 */
import type { Dispatch, StateUpdater } from 'preact/hooks';
import type { Decision } from './console.types';
import type { Pending } from './conversation';
import type { WebhookLine } from './webhook-status';

interface Props {
  pending: Pending;
  decisions: Record<string, Decision>;
  setDecisions: Dispatch<StateUpdater<Record<string, Decision>>>;
  running: boolean;
  onSubmit: () => void;
  /** What became of the pause's webhooks (none when the agent has no webhooks). */
  webhooks?: WebhookLine[];
  /** Stateful agents only: the text of a refinement, and where it goes. */
  refine?: { text: string; setText: (text: string) => void; onRefine: () => void; note: string | undefined };
}

export function ApprovalsPanel({ pending, decisions, setDecisions, running, onSubmit, webhooks, refine }: Props) {
  // Every call of the pause is answered in one resume, so submit waits until each has a choice.
  const allDecided = pending.calls.every((c) => decisions[c.id]?.approved !== undefined && decisions[c.id]?.approved !== null);
  return (
    <section class="approvals" data-testid="approvals">
      <h3>{pending.plan ? 'Approve this plan' : 'Approval required'}</h3>
      {webhooks?.map((w) => (
        <p class="muted small webhook" data-testid="webhook-status" title={w.title}>
          {w.text}
        </p>
      ))}
      {pending.calls.map((c) => {
        const d = decisions[c.id] ?? { approved: null, reason: '' };
        const set = (patch: Partial<Decision>) => setDecisions((ds) => ({ ...ds, [c.id]: { ...d, ...patch } }));
        return (
          <div class="call" data-testid="pending-call">
            <code>
              {c.name}({c.arguments})
            </code>
            {c.risk && <span class="muted small"> {c.risk}</span>}
            <div>
              <label>
                <input type="radio" data-testid="approve" checked={d.approved === true} onChange={() => set({ approved: true })} /> approve
              </label>
              <label>
                <input type="radio" data-testid="reject" checked={d.approved === false} onChange={() => set({ approved: false })} /> reject
              </label>
              <input
                data-testid="reason"
                placeholder="reason (optional)"
                value={d.reason}
                onInput={(e) => set({ reason: (e.target as HTMLInputElement).value })}
              />
            </div>
          </div>
        );
      })}
      <button data-testid="submit-decisions" disabled={!allDecided || running} onClick={onSubmit}>
        Submit decisions
      </button>
      {refine && (
        <form
          class="refine"
          onSubmit={(e) => {
            e.preventDefault();
            refine.onRefine();
          }}
        >
          <input
            data-testid="refine-text"
            placeholder="or refine: tell the agent what to do instead"
            value={refine.text}
            onInput={(e) => refine.setText((e.target as HTMLInputElement).value)}
          />
          <button type="submit" data-testid="refine" disabled={!refine.text.trim() || running}>
            Refine
          </button>
          {refine.note && (
            <div class="error small" data-testid="refine-note">
              {refine.note}
            </div>
          )}
        </form>
      )}
    </section>
  );
}
