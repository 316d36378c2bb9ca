import type { Response } from 'express';
import { SseStream } from '../../common/sse/sse-stream';
import { RequestEventLog, TaskEventLogService } from '../../tasks/events/task-event-log.service';

/**
 * How long the 200's headers wait for the first event to leave with it (SseStream.openWithin): well
 * under any real model's time to a first token, long enough for a fast one's.
 */
export const HEADERS_WITHIN_MS = 20;

/**
 * The one way a v3 stream is sent: the request's event log (src/tasks/events/task-event-log.service.ts) followed
 * after `after`, each event with its `id: {seq}-{n}`, keepalive comments in the silences, until the
 * log closes (after `final-response` or `error`) or the client goes away. A client leaving never
 * stops the request: its events go on into the log for a reconnect.
 */
export async function sendEventStream(res: Response, events: TaskEventLogService, log: RequestEventLog, after: number, keepaliveMs: number): Promise<void> {
  const stream = new SseStream(res, keepaliveMs);
  stream.openWithin(HEADERS_WITHIN_MS);
  try {
    // An event logged just now comes with its JSON (a string is sent as it is).
    await events.follow(log, after, (e) => stream.send(e.event, e.json ?? e.data, e.id), stream.signal);
  } finally {
    stream.end();
  }
}
