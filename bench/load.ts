/** Closed-loop load: `concurrency` conversations, each sending turns one after another. */

export interface LoadResult {
  requests: number;
  seconds: number;
  throughput: number;
  p50: number;
  p95: number;
  p99: number;
}

/** A conversation: `turn(state)` sends one turn and returns the state for the next one. */
export type Turn<S> = (state: S | undefined) => Promise<S>;

export async function runLoad<S>(turn: Turn<S>, concurrency: number, totalRequests: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let remaining = totalRequests;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      let state: S | undefined;
      while (remaining > 0) {
        remaining--;
        const t0 = performance.now();
        state = await turn(state);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { requests: latencies.length, seconds, throughput: latencies.length / seconds, ...percentiles(latencies) };
}

export function percentiles(values: number[]): { p50: number; p95: number; p99: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** A GET of `url` as a load's request (its body read to the end; a non-2xx answer fails the run). */
export function getTurn(url: string): Turn<string> {
  return async () => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url} answered ${r.status}`);
    await r.text();
    return '';
  };
}

export async function postJson<T>(url: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) throw new Error(`${url} answered ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** One server-sent event: its `event:` name (`message` without one) and its `data:` parsed as JSON. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * POSTs `body` to an SSE route and reads the stream to its end; returns its events. Throws on a
 * status other than 200 or an `error` event.
 */
export async function postSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseEvent[]> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${url} answered ${r.status}: ${text.slice(0, 300)}`);
  const events: SseEvent[] = [];
  for (const frame of text.split(/\r?\n\r?\n/)) {
    let event = 'message';
    const data: string[] = [];
    for (const line of frame.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
    if (!data.length) continue;
    events.push({ event, data: JSON.parse(data.join('\n')) as Record<string, unknown> });
  }
  const error = events.find((e) => e.event === 'error');
  if (error) throw new Error(`${url} streamed an error: ${JSON.stringify(error.data).slice(0, 300)}`);
  return events;
}

/** The `final-response` event's data of a stream read to its end (none: an error). */
export async function finalOfSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const events = await postSse(url, body, headers);
  const final = events.find((e) => e.event === 'final-response');
  if (!final) throw new Error(`${url} streamed no final-response (events: ${events.map((e) => e.event).join(', ')})`);
  return final.data;
}
