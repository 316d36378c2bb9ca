/** A paused request's calls: approve or reject each (with an optional reason), then submit all at once. */
import type { Dispatch, StateUpdater } from 'preact/hooks';
import type { Decision } from './console.types';
import type { Pending } from './conversation';

interface Props {
  pending: Pending;
  decisions: Record<string, Decision>;
  setDecisions: Dispatch<StateUpdater<Record<string, Decision>>>;
  running: boolean;
  onSubmit: () => void;
}

export function ApprovalsPanel({ pending, decisions, setDecisions, running, onSubmit }: Props) {
  // Every call of the pause is answered in one resume, so submit waits until each has a choice.
  const allDecided = pending.calls.every((c) => decisions[c.id]?.approved !== undefined && decisions[c.id]?.approved !== null);
  return (
    <section class="approvals" data-testid="approvals">
      <h3>{pending.plan ? 'Approve this plan' : 'Approval required'}</h3>
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
    </section>
  );
}
