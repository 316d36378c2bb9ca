import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { formatSelfTimes } from './cpu-profile';
import { startEntraAuth } from './entra-auth';
import { runLoad } from './load';
import { warmUp } from './measure';
import { StoreEnv } from './stores';
import { startOurs, streamedOf } from './subjects';

const PROFILE_TURNS = Number(process.env.BENCH_PROF_TURNS ?? 4000);

/**
 * BENCH_CPU_PROF=<dir>: our server under `node --cpu-prof` on the first store of BENCH_STORES,
 * PROFILE_TURNS turns at 16 conversations after the bench's warm-up (measure.ts `warmUp`); returns the top 25 functions by self
 * time over the load only (the start-up and warm-up samples are left out). With
 * BENCH_PROF_AUTH=entra the server runs with Entra auth (bench/entra-auth.ts), keys cached by the
 * warm-up. With BENCH_PROF_STREAM=1 the turns are streamed (POST …/sse, read to the end).
 */
export async function profileOurs(storeEnv: StoreEnv, modelUrl: string, dirArg: string): Promise<string> {
  const dir = resolve(dirArg);
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) rmSync(join(dir, f));
  const auth = process.env.BENCH_PROF_AUTH === 'entra' ? await startEntraAuth() : undefined;
  try {
    const started0 = await startOurs(storeEnv, modelUrl, { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`], auth });
    const ours = process.env.BENCH_PROF_STREAM === '1' ? streamedOf(started0) : started0;
    await warmUp(ours);
    const started = performance.now();
    const load = await runLoad(ours.turn, 16, PROFILE_TURNS);
    await ours.proc.stop(); // SIGTERM: the server exits cleanly and Node writes the profile
    const lastMs = performance.now() - started;
    return [
      `# CPU profile: ${ours.name}, ${load.requests} turns at c=16, ${load.throughput.toFixed(0)} req/s under the profiler (${new Date().toISOString()})`,
      '',
      formatSelfTimes(dir, lastMs),
      '',
    ].join('\n');
  } finally {
    await auth?.stop();
  }
}
