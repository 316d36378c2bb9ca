/**
 * The timeline panel's data: the shown task's events (`GET …/tasks/{task_id}/events`, a page at a
 * time, "more" following `next_cursor`) and its plans (`GET …/tasks/{task_id}/plans`). Read only
 * while the panel is open, again when the task changes and when a turn of it ends.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { AgentInfo, api, ApiError } from './api';
import type { PlanRow, TimelineEvent } from './console.types';
import { timelinePageParam } from './reload.state';

interface EventPage {
  events: TimelineEvent[];
  next_cursor: string | null;
}

export function useTimeline(agent: AgentInfo | undefined, taskId: string | undefined, running: boolean) {
  const [open, setOpen] = useState(false);
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [plans, setPlans] = useState<PlanRow[]>([]);
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(false);
  // Answers to an older read (another task, an earlier turn) are dropped.
  const generation = useRef(0);

  const base = agent?.stateful && taskId ? `${agent.prefix}/tasks/${encodeURIComponent(taskId)}` : undefined;

  // Another task (or none) empties the panel; a turn of the shown one keeps it until it ends.
  useEffect(() => {
    generation.current++;
    setEvents([]);
    setPlans([]);
    setCursor(null);
    setError(undefined);
  }, [base]);

  useEffect(() => {
    if (open && base && !running) void load(base, ++generation.current);
  }, [open, base, running]);

  async function load(url: string, gen: number): Promise<void> {
    setLoading(true);
    try {
      const [page, planList] = await Promise.all([
        api<EventPage>(`${url}/events?limit=${timelinePageParam}`),
        api<{ plans: PlanRow[] }>(`${url}/plans`).catch(() => ({ plans: [] })),
      ]);
      if (gen !== generation.current) return;
      setEvents(page.events);
      setCursor(page.next_cursor);
      setPlans(planList.plans);
    } catch (e) {
      if (gen === generation.current) setError(describe(e));
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  }

  /** The next page, after the last event shown. */
  async function more(): Promise<void> {
    if (!base || !cursor) return;
    const gen = generation.current;
    setLoading(true);
    try {
      const page = await api<EventPage>(`${base}/events?limit=${timelinePageParam}&cursor=${encodeURIComponent(cursor)}`);
      if (gen !== generation.current) return;
      setEvents((xs) => [...xs, ...page.events]);
      setCursor(page.next_cursor);
    } catch (e) {
      if (gen === generation.current) setError(describe(e));
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  }

  return { open, setOpen, available: !!base, events, plans, more: cursor ? more : undefined, error, loading };
}

function describe(e: unknown): string {
  // A server without the routes (older than the audit archive) answers 404 for a task it holds.
  if (e instanceof ApiError && e.status === 404 && e.body?.code === 'ROUTE_NOT_FOUND') return 'This server serves no task timeline';
  return (e as Error).message;
}

export type Timeline = ReturnType<typeof useTimeline>;
