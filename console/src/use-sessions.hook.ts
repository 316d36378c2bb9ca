/** The sessions browser's data: the agent's recent sessions, and the tasks of the one opened. */
import { useEffect, useState } from 'preact/hooks';
import { AgentInfo, api, ApiError } from './api';
import type { SessionRow, TaskRow } from './console.types';

/** Reloads the listing whenever the agent or the shown task changes (a new task may start a session). */
export function useSessions(agent: AgentInfo | undefined, taskId: string | undefined, onError: (message: string) => void) {
  const [sessions, setSessions] = useState<SessionRow[] | null>(null);
  const [openSession, setOpenSession] = useState<{ id: string; tasks: TaskRow[] }>();

  useEffect(() => {
    if (agent?.stateful) void loadSessions(agent);
    else setSessions(null);
  }, [agent, taskId]);

  async function loadSessions(a: AgentInfo): Promise<void> {
    try {
      const page = await api<{ sessions: SessionRow[] }>(`${a.prefix}/sessions?limit=20`);
      setSessions(page.sessions);
    } catch (e) {
      // The listing is newer than the rest of v3: without it (404) the panel is hidden.
      setSessions(null);
      if (!(e instanceof ApiError && e.status === 404)) onError(String((e as Error).message));
    }
  }

  async function showSession(a: AgentInfo, id: string): Promise<void> {
    const page = await api<{ tasks: TaskRow[] }>(`${a.prefix}/sessions/${encodeURIComponent(id)}?limit=50`);
    setOpenSession({ id, tasks: page.tasks });
  }

  return { sessions, openSession, showSession, closeSession: () => setOpenSession(undefined) };
}
