/**
 * `npm run bench`: v3 invoke throughput and latency per state store, against a bare Node HTTP
 * baseline doing the same stateful turn, both talking to the same instant model server, measured
 * in the same run. Prints a Markdown report; it asserts nothing (this is not a test).
 */
import { join } from 'node:path';
import { LoadResult, percentiles, postJson, runLoad, Turn } from './load';
import { freePort } from '../test/support/services';
import { Proc, spawnServer, spawnWithPort } from './processes';
import { startBenchStores, StoreEnv } from './stores';

const ROOT = join(__dirname, '..', '..');
const C1_REQUESTS = Number(process.env.BENCH_C1_REQUESTS ?? 400);
const C16_REQUESTS = Number(process.env.BENCH_C16_REQUESTS ?? 1600);
const HISTORY_SAMPLES = Number(process.env.BENCH_HISTORY_SAMPLES ?? 50);
const STORED_TURNS = Number(process.env.BENCH_STORED_TURNS ?? 10_000);
const TARGET_ROUNDS = Number(process.env.BENCH_TARGET_ROUNDS ?? 3);

interface Subject {
  name: string;
  turn: Turn<string>;
  proc: Proc;
}

async function startOurs(storeEnv: StoreEnv, modelUrl: string): Promise<Subject> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/Bench/1`;
  const proc = await spawnServer(
    [join(ROOT, 'dist', 'cli.js'), 'serve', join(ROOT, 'bench', 'agents'), '--port', String(port)],
    {
      TA_AUTH_MODE: 'dev',
      TA_HOST: '127.0.0.1',
      TA_BASE_URL: `${modelUrl}/v1`,
      TA_API_KEY: 'bench',
      TA_LOG_LEVEL: 'info',
      ...storeEnv.env,
    },
    `${base}/health/live`,
  );
  const item = [{ content_type: 'text', content: 'hello' }];
  return {
    name: `teal-agent-server (${storeEnv.name})`,
    proc,
    turn: async (taskId) => (await postJson<{ task_id: string }>(base, taskId ? { task_id: taskId, items: item } : { items: item })).task_id,
  };
}

async function startBaseline(modelUrl: string): Promise<Subject> {
  const proc = await spawnWithPort(join(__dirname, 'baseline.server.js'), { MODEL_URL: modelUrl });
  const url = `http://127.0.0.1:${proc.port}/turn`;
  return {
    name: 'baseline (bare node:http + Map)',
    proc,
    turn: async (id) => (await postJson<{ conversation_id: string }>(url, { conversation_id: id, text: 'hello' })).conversation_id,
  };
}

/** Median latency of a follow-on once a conversation has `turns` turns of history. */
async function followOnAt(subject: Subject, turns: number): Promise<number> {
  let id = await subject.turn(undefined);
  for (let i = 1; i < turns; i++) id = await subject.turn(id);
  const samples: number[] = [];
  for (let i = 0; i < HISTORY_SAMPLES; i++) {
    const t0 = performance.now();
    id = await subject.turn(id);
    samples.push(performance.now() - t0);
  }
  return percentiles(samples).p50;
}

interface Report {
  name: string;
  c1: LoadResult;
  c16: LoadResult;
  history: Record<number, number>;
  rssIdle: number;
  rssAfter?: number;
}

async function measure(subject: Subject): Promise<Report> {
  await new Promise((r) => setTimeout(r, 1500));
  const rssIdle = subject.proc.rssMiB();
  await runLoad(subject.turn, 4, 200); // warm-up (JIT, connection pools)
  const c1 = await runLoad(subject.turn, 1, C1_REQUESTS);
  const c16 = await runLoad(subject.turn, 16, C16_REQUESTS);
  const history: Record<number, number> = {};
  for (const n of [1, 100, 500]) history[n] = await followOnAt(subject, n);
  return { name: subject.name, c1, c16, history, rssIdle };
}

/** RSS once 10,000 more turns are stored (conversations of 10 turns, plus what the steps above stored). */
async function rssAfterStoredTurns(subject: Subject): Promise<number> {
  let left = Math.ceil(STORED_TURNS / 10);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (left-- > 0) {
        let id = await subject.turn(undefined);
        for (let i = 1; i < 10; i++) id = await subject.turn(id);
      }
    }),
  );
  await new Promise((r) => setTimeout(r, 1000));
  return subject.proc.rssMiB();
}

interface TargetRound {
  round: number;
  throughput: number;
  p50: number;
  history500: number;
}

/** The target ratios, measured on neighbours: baseline then server, round after round. */
async function targetRounds(baseline: Subject, ours: Subject): Promise<TargetRound[]> {
  const rounds: TargetRound[] = [];
  for (let round = 1; round <= TARGET_ROUNDS; round++) {
    const b16 = await runLoad(baseline.turn, 16, C16_REQUESTS);
    const o16 = await runLoad(ours.turn, 16, C16_REQUESTS);
    const b500 = await followOnAt(baseline, 500);
    const o500 = await followOnAt(ours, 500);
    rounds.push({ round, throughput: o16.throughput / b16.throughput, p50: o16.p50 / b16.p50, history500: o500 / b500 });
  }
  return rounds;
}

const f = (n: number, d = 1) => n.toFixed(d);

function print(baseline: Report, reports: Report[], rounds: TargetRound[]): void {
  const lines: string[] = [];
  lines.push(`# Benchmark (${new Date().toISOString()}, node ${process.version}, ${require('node:os').cpus().length} cores)`);
  lines.push('');
  lines.push('| subject | c=1 req/s | c=1 p50 ms | c=1 p99 ms | c=16 req/s | c=16 p50 ms | c=16 p99 ms | c=16 throughput × baseline | c=16 p50 × baseline |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const r of [baseline, ...reports]) {
    lines.push(
      `| ${r.name} | ${f(r.c1.throughput, 0)} | ${f(r.c1.p50, 2)} | ${f(r.c1.p99, 2)} | ${f(r.c16.throughput, 0)} | ${f(r.c16.p50, 2)} | ${f(r.c16.p99, 2)} | ${f(r.c16.throughput / baseline.c16.throughput, 2)} | ${f(r.c16.p50 / baseline.c16.p50, 2)} |`,
    );
  }
  lines.push('');
  lines.push('| subject | follow-on p50 ms at 1 turn | at 100 | at 500 | at 500 × baseline |');
  lines.push('|---|---|---|---|---|');
  for (const r of [baseline, ...reports]) {
    lines.push(`| ${r.name} | ${f(r.history[1]!, 2)} | ${f(r.history[100]!, 2)} | ${f(r.history[500]!, 2)} | ${f(r.history[500]! / baseline.history[500]!, 2)} |`);
  }
  lines.push('');
  lines.push('| subject | RSS idle MiB | RSS after the run + 10,000 stored turns MiB |');
  lines.push('|---|---|---|');
  for (const r of [baseline, ...reports]) lines.push(`| ${r.name} | ${f(r.rssIdle)} | ${r.rssAfter === undefined ? '—' : f(r.rssAfter)} |`);
  if (rounds.length) {
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    lines.push('');
    lines.push(
      `Targets (in-memory store, telemetry and validation on), from ${rounds.length} rounds in which the baseline and the server were measured alternately, both running (a shared 2-core machine drifts between runs, so the ratios compare neighbours):`,
    );
    lines.push('');
    lines.push('| round | c=16 throughput × baseline | c=16 p50 × baseline | follow-on at 500 turns × baseline |');
    lines.push('|---|---|---|---|');
    for (const r of rounds) lines.push(`| ${r.round} | ${f(r.throughput, 2)} | ${f(r.p50, 2)} | ${f(r.history500, 2)} |`);
    const t1 = median(rounds.map((r) => r.throughput));
    const t2 = median(rounds.map((r) => r.p50));
    const t3 = median(rounds.map((r) => r.history500));
    lines.push(`| median | ${f(t1, 2)} | ${f(t2, 2)} | ${f(t3, 2)} |`);
    lines.push('');
    lines.push(`- c=16 throughput ≥ 0.3× baseline: ${f(t1, 2)}× ${t1 >= 0.3 ? 'met' : 'NOT met'}`);
    lines.push(`- c=16 p50 ≤ 3× baseline: ${f(t2, 2)}× ${t2 <= 3 ? 'met' : 'NOT met'}`);
    lines.push(`- follow-on at 500 turns ≤ 3× baseline: ${f(t3, 2)}× ${t3 <= 3 ? 'met' : 'NOT met'}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const model = await spawnWithPort(join(__dirname, 'fast-model.server.js'), {});
  const modelUrl = `http://127.0.0.1:${model.port}`;
  const stores = await startBenchStores();
  const procs: Proc[] = [model];
  try {
    const baselineSubject = await startBaseline(modelUrl);
    procs.push(baselineSubject.proc);
    const baseline = await measure(baselineSubject);
    const reports: Report[] = [];
    let rounds: TargetRound[] = [];
    for (const storeEnv of stores.envs) {
      const ours = await startOurs(storeEnv, modelUrl);
      procs.push(ours.proc);
      process.stderr.write(`measuring ${ours.name}\n`);
      const report = await measure(ours);
      // The targets are measured before the stores fill up, on both, alternately.
      if (storeEnv.name === 'memory') rounds = await targetRounds(baselineSubject, ours);
      report.rssAfter = await rssAfterStoredTurns(ours);
      reports.push(report);
      await ours.proc.stop();
    }
    baseline.rssAfter = await rssAfterStoredTurns(baselineSubject);
    print(baseline, reports, rounds);
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await stores.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
