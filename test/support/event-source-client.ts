import { EventSource } from 'eventsource';

/**
 * A real SSE client for the reattach tests: the `eventsource` package, which implements the WHATWG
 * `EventSource` (the browser's): `Last-Event-ID` on its own reconnects, and a 204 stops it for good.
 * The changes, through its `fetch` hook: `headers` (a browser sends cookies instead), and its
 * reconnection time, `retryMs`, set as a server sets it, by a `retry:` field before the stream
 * (WHATWG's default, 3 s, would be idle time in every test that reconnects).
 */

export interface ReceivedEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** The v3 event names a task stream may send (an EventSource only reports names it listens to). */
const V3_EVENTS = [
  'partial-response',
  'tool-call',
  'tool-result',
  'approval-required',
  'approved',
  'rejected',
  'queued',
  'cancelled',
  'final-response',
  'error',
];

export interface EventSourceClient {
  source: EventSource;
  events: ReceivedEvent[];
  /** Resolves once `done(events)` holds. */
  until: (done: (events: ReceivedEvent[]) => boolean) => Promise<ReceivedEvent[]>;
  /** Resolves when the EventSource gave up for good (readyState CLOSED: a 204 or an error status). */
  closed: Promise<void>;
  /** Every URL and `Last-Event-ID` it connected with, in order. */
  connects: { url: string; lastEventId: string | null }[];
  close: () => void;
  /**
   * Ends the current connection as a network drop that ends cleanly would: the EventSource then
   * reconnects by itself (after its retry interval) with `Last-Event-ID`, to `route`'s URL.
   */
  cut: () => void;
}

export interface EventSourceOptions {
  headers?: Record<string, string>;
  /** Where connection `attempt` (0 = the first) goes: to reconnect to another replica, as behind a load balancer. */
  route?: (attempt: number, url: string) => string;
  /** The reconnection time (the `retry:` field put before each stream answered): 100 ms unless given. */
  retryMs?: number;
  /** Awaited before connection `attempt` goes out: keeps the client away until a test lets it back. */
  gate?: (attempt: number) => Promise<void> | undefined;
}

export function openEventSource(url: string, { headers = {}, route = (_n, u) => u, retryMs = 100, gate }: EventSourceOptions = {}): EventSourceClient {
  const events: ReceivedEvent[] = [];
  const connects: { url: string; lastEventId: string | null }[] = [];
  const waiters = new Set<() => void>();
  let closedResolve!: () => void;
  const closed = new Promise<void>((r) => (closedResolve = r));
  let cutCurrent = (): void => undefined;
  const source = new EventSource(url, {
    fetch: async (input, init) => {
      await gate?.(connects.length);
      const h = new Headers(init?.headers);
      const target = route(connects.length, String(input));
      connects.push({ url: target, lastEventId: h.get('last-event-id') });
      for (const [k, v] of Object.entries(headers)) h.set(k, v);
      const res = await fetch(target, { ...init, headers: h });
      if (!res.body) return res;
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(`retry: ${retryMs}\n\n`));
          cutCurrent = () => {
            controller.close();
            void reader.cancel();
          };
        },
        async pull(controller) {
          const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
          if (done) controller.close();
          else controller.enqueue(value);
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    },
  });
  for (const name of V3_EVENTS) {
    source.addEventListener(name, (e) => {
      if (!('data' in e) || typeof e.data !== 'string') return; // a connection error, not an `event: error` frame
      events.push({ id: e.lastEventId, event: name, data: JSON.parse(e.data) as Record<string, unknown> });
      waiters.forEach((w) => w());
    });
  }
  source.addEventListener('error', () => {
    if (source.readyState === source.CLOSED) closedResolve();
  });
  const until = (done: (events: ReceivedEvent[]) => boolean) =>
    new Promise<ReceivedEvent[]>((resolve) => {
      const check = () => {
        if (!done(events)) return;
        waiters.delete(check);
        resolve(events);
      };
      waiters.add(check);
      check();
    });
  return { source, events, until, closed, connects, close: () => source.close(), cut: () => cutCurrent() };
}
