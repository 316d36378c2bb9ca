/** The shown task's timeline: its plans with their status, then its events one line each, a page at a time. */
import { failed, summarize, timeOf } from './timeline';
import type { Timeline } from './use-timeline.hook';

export function TimelinePanel({ timeline: t }: { timeline: Timeline }) {
  return (
    <section class="timeline" data-testid="timeline">
      <h3>
        Timeline{' '}
        <button class="link small" onClick={() => t.setOpen(false)}>
          close
        </button>
      </h3>
      {!t.available && <p class="muted small">No task yet</p>}
      {t.error && (
        <p class="error small" data-testid="timeline-error">
          {t.error}
        </p>
      )}
      {t.plans.length > 0 && (
        <div class="plans">
          <h4>Plans</h4>
          {t.plans.map((p) => (
            <div class="plan" data-testid="plan" key={p.plan_id} title={p.reason ?? undefined}>
              <span class={`chip ${p.status}`} data-testid="plan-status">
                {p.status}
              </span>{' '}
              <span class="small">
                {p.steps.length} step{p.steps.length === 1 ? '' : 's'}
                {p.max_risk && ` · max risk ${p.max_risk}`}
                {p.duration_ms !== null && ` · ran ${p.duration_ms} ms`}
              </span>
              <div class="muted small">
                {timeOf(p.proposed_at)} {p.steps.map((s) => s.name).join(', ')}
              </div>
            </div>
          ))}
        </div>
      )}
      <h4>Events</h4>
      {t.available && !t.loading && !t.error && t.events.length === 0 && <p class="muted small">None</p>}
      <ol class="events">
        {t.events.map((e) => (
          <li key={e.event_id} data-testid="event" data-type={e.type} class={failed(e) ? 'error' : ''}>
            <span class="muted" title={e.at}>
              {timeOf(e.at)}
            </span>{' '}
            <span class="type">{e.type}</span> <span data-testid="event-summary">{summarize(e)}</span>
          </li>
        ))}
      </ol>
      {t.loading && <p class="muted small">loading…</p>}
      {t.more && !t.loading && (
        <button class="link small" data-testid="timeline-more" onClick={() => void t.more!()}>
          more
        </button>
      )}
    </section>
  );
}
