/**
 * Following a task's stream, `GET /{name}/{version}/tasks/{task_id}/stream` (docs/api.md,
 * Reattaching), the console's one way back to a running request: every replica answers it from the
 * stored stream log, then live, then the final event.
 */
import { ApiError, getSse } from './api';
import { applyV3Event, TurnSink } from './conversation';

/**
 * The request's events after `last` (the last event id this tab saw; without one, all of them) up
 * to its final event. As an EventSource does, a stream that ends before its final event (a lost
 * connection, or a follower whose store reads kept failing) is read again after the last id seen,
 * and so is a 429 or 503 refusal, after a pause; 204 means the outcome was seen already. Any other
 * refusal (401, 404, 422) is thrown.
 */
export async function followTaskStream(url: string, last: string | undefined, sink: TurnSink, signal: AbortSignal): Promise<void> {
  let wait = 1000;
  for (;;) {
    let ended = false;
    try {
      const onEvent = (e: Parameters<typeof applyV3Event>[0]) => {
        if (e.id) last = e.id;
        if (e.event === 'final-response' || e.event === 'error') ended = true;
        wait = 1000;
        applyV3Event(e, sink);
      };
      const streamed = await getSse(url, onEvent, signal, last ? { 'last-event-id': last } : {});
      if (!streamed || ended) return;
    } catch (e) {
      if (signal.aborted || !retryable(e)) throw e;
    }
    await pause(wait, signal);
    if (signal.aborted) return;
    wait = Math.min(wait * 2, 8000);
  }
}

/** Worth reading again: a network failure (fetch's TypeError), too many streams, or the store unreachable. */
function retryable(e: unknown): boolean {
  return e instanceof ApiError ? e.status === 429 || e.status === 503 : e instanceof TypeError;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
