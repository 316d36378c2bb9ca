import { LoadResult, percentiles, runLoad } from './load';
import { Subject } from './subjects';

/** A load result with the server's CPU time (user + sys, from /proc) per turn beside it. */
export interface Measured extends LoadResult {
  cpuMsPerTurn: number;
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
