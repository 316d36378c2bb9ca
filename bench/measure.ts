import { LoadResult, percentiles, runLoad } from './load';
import { Subject } from './subjects';

/** A load result with the server's CPU time (user + sys, from /proc) per turn beside it. */
export interface Measured extends LoadResult {
  cpuMsPerTurn: number;
}

/**
 * Turns at 16 conversations a subject serves before it is measured (after 200 at 4, which also open
 * its pools and connections): V8 keeps compiling a server's hot functions for thousands of turns
 * (with --trace-opt: ~375 ms of compiler time over our turns 1,000-5,000, and the bare baseline
 * compiled too until ~6,000), a one-time cost that a long-running server does not pay per turn.
 * Every subject gets the same warm-up. BENCH_WARMUP_TURNS, default 5000.
 */
const WARMUP_TURNS = Number(process.env.BENCH_WARMUP_TURNS ?? 5000);

export async function warmUp(subject: Subject): Promise<void> {
  await runLoad(subject.turn, 4, 200);
  if (WARMUP_TURNS > 0) await runLoad(subject.turn, 16, WARMUP_TURNS);
}

export async function measureLoad(subject: Subject, concurrency: number, requests: number): Promise<Measured> {
  const cpu0 = subject.proc.cpuMs();
  const load = await runLoad(subject.turn, concurrency, requests);
  return { ...load, cpuMsPerTurn: (subject.proc.cpuMs() - cpu0) / load.requests };
}

/** A conversation with `turns` turns of history; returns its id. */
export async function conversationOf(subject: Subject, turns: number): Promise<string> {
  let id = await subject.turn(undefined);
  for (let i = 1; i < turns; i++) id = await subject.turn(id);
  return id;
}

/** `samples` follow-ons, one at a time, on the conversation `id` (which grows by as many turns). */
export async function followOns(subject: Subject, id: string, samples: number): Promise<Measured> {
  const latencies: number[] = [];
  const cpu0 = subject.proc.cpuMs();
  const started = performance.now();
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    id = await subject.turn(id);
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  return { requests: samples, seconds, throughput: samples / seconds, ...percentiles(latencies), cpuMsPerTurn: (subject.proc.cpuMs() - cpu0) / samples };
}
