/** Shapes the console reads from the service, beyond those api.ts and conversation.ts own. */

export interface SessionRow {
  session_id: string;
  task_count: number;
  last_activity_at: string;
  title: string | null;
}

export interface TaskRow {
  task_id: string;
  status: string;
  request_count: number;
  updated_at: string;
}

export interface ServiceIndex {
  agents?: { path: string; routes?: { method: string; path: string }[] }[];
}

/** One approve/reject choice while a request is paused; null until the user picks. */
export interface Decision {
  approved: boolean | null;
  reason: string;
}

export const RUNNING = new Set(['Running', 'Queued']);
