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

export async function postJson<T>(url: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) throw new Error(`${url} answered ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}
