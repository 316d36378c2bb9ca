/**
 * The webhook status of the shown pause (webhook-status.ts): what the last read of the task said
 * of its request's deliveries, read again while one of them still waits, since a delivery settles
 * after the pause was shown (it is sent once the pause is stored, and retried for hours).
 */
import { useEffect, useState } from 'preact/hooks';
import { AgentInfo, api } from './api';
import type { TaskView, WebhookView } from './console.types';
import type { Pending } from './conversation';
import { approvalWebhooks, recheckIn, webhookLines } from './webhook-status';

export function useWebhookStatus(agent: AgentInfo | undefined, taskId: string | undefined, pending: Pending | undefined, running: boolean) {
  /** Request id → its deliveries, as the last read of the task listed them. */
  const [byRequest, setByRequest] = useState<ReadonlyMap<string, WebhookView[]>>(new Map());
  /** Reads made for the shown pause: the wait before the next one doubles with each. */
  const [reads, setReads] = useState(0);

  /** Takes the deliveries of a task just read (the page's own reads of it, and ours). */
  function seen(task: TaskView): void {
    setByRequest(new Map((task.requests ?? []).flatMap((r) => (r.webhooks ? [[r.request_id, r.webhooks] as const] : []))));
  }

  useEffect(() => setReads(0), [pending?.pauseId]);

  // While a turn runs the pause may come from its stream, before the task holding its deliveries
  // is read back (the turn's end does that): wait for it, then read again while one still waits.
  useEffect(() => {
    if (!agent?.stateful || !taskId || !pending || running) return;
    const wait = recheckIn(approvalWebhooks(byRequest.get(pending.requestId), pending), reads, Date.now());
    if (wait === undefined) return;
    let current = true;
    const timer = setTimeout(async () => {
      try {
        const task = await api<TaskView>(`${agent.prefix}/tasks/${encodeURIComponent(taskId)}`);
        if (current) seen(task);
      } catch {
        /* the status shown stays; the next read may do better */
      }
      if (current) setReads((n) => n + 1);
    }, wait);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [agent, taskId, pending, running, byRequest, reads]);

  const lines = pending ? webhookLines(approvalWebhooks(byRequest.get(pending.requestId), pending)) : [];
  return { seen, lines };
}
