/** The sessions browser: recent sessions of a stateful agent; opening one lists its tasks to reopen. */
import type { SessionRow, TaskRow } from './console.types';

interface Props {
  sessions: SessionRow[];
  openSession: { id: string; tasks: TaskRow[] } | undefined;
  onShowSession: (id: string) => void;
  onOpenTask: (id: string) => void;
}

export function SessionsPanel({ sessions, openSession, onShowSession, onOpenTask }: Props) {
  return (
    <section data-testid="sessions">
      <h3>Sessions</h3>
      {sessions.length === 0 && <p class="muted small">None yet</p>}
      {sessions.map((s) => (
        <div>
          <button class="link" data-testid="session" onClick={() => onShowSession(s.session_id)}>
            {s.title ?? s.session_id.slice(0, 8)}
          </button>
          <span class="muted small">
            {' '}
            · {s.task_count} task{s.task_count === 1 ? '' : 's'}
          </span>
          {openSession?.id === s.session_id && (
            <ul>
              {openSession.tasks.map((t) => (
                <li>
                  <button class="link" data-testid="task" onClick={() => onOpenTask(t.task_id)}>
                    {t.task_id.slice(0, 8)}
                  </button>{' '}
                  <span class="muted small">
                    {t.status}, {t.request_count} request{t.request_count === 1 ? '' : 's'}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </div>
      ))}
    </section>
  );
}
