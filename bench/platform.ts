import { join } from 'node:path';
import { getTurn, runLoad, Turn } from './load';
import { spawnWithPort, Proc } from './processes';
import { median } from './rounds';
import { startBaseline, startOurs } from './subjects';

/**
 * The platform's share of a turn (issue 27: keep NestJS on Express unless a profile shows the
 * platform above 25 % of a turn). `BENCH_ENTRY=platform npm run bench`: server CPU per request at
 * 16 connections (the sum of the server's threads' run time, as the main benchmark measures it)
 * for a JSON GET on bare `node:http`, on Express alone, on Nest + Express with nothing of ours,
 * and on ours (`GET /Bench/1/health/live`: every middleware, guard, interceptor, span and log
 * decision of ours, no task), then a whole v3 turn of ours and of the bare baseline (conversations
 * of at most 100 turns, as in the main benchmark's c=16 phase); alternating
 * rounds (`BENCH_ROUNDS`, 5) of `BENCH_PLATFORM_REQUESTS` (4000) requests after 1000 of warm-up,
 * medians. The differences give each layer's cost and its share of ours' turn.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_PLATFORM_REQUESTS ?? 4000);
const CONCURRENCY = 16;

interface Measured {
  name: string;
  proc: Proc;
  request: Turn<string>;
}

/** Turns of conversations of at most CONVERSATION_TURNS turns (the main benchmark's c=16 phase: 100), so the turn's cost is not its history's. */
const CONVERSATION_TURNS = 100;

function shortConversations(turn: Turn<string>): Turn<string> {
  const turns = new Map<string, number>();
  return async (id) => {
    const n = id === undefined ? 0 : (turns.get(id) ?? 0);
    if (id !== undefined) turns.delete(id);
    const next = await turn(n >= CONVERSATION_TURNS ? undefined : id);
    turns.set(next, n >= CONVERSATION_TURNS ? 1 : n + 1);
    return next;
  };
}

async function main(): Promise<void> {
  const model = await spawnWithPort(join(__dirname, 'fast-model.server.js'), {});
  const modelUrl = `http://127.0.0.1:${model.port}`;
  const platform = async (file: string) => {
    const p = await spawnWithPort(join(__dirname, 'platform', file), {});
    return { proc: p, url: `http://127.0.0.1:${p.port}/x` };
  };
  const bare = await platform('node-http.server.js');
  const express = await platform('express.server.js');
  const nest = await platform('nest.server.js');
  const ours = await startOurs({ name: 'memory', env: { TA_STATE_STORE: 'memory' } }, modelUrl);
  const baseline = await startBaseline(modelUrl);
  const subjects: Measured[] = [
    { name: 'node:http, GET', proc: bare.proc, request: getTurn(bare.url) },
    { name: 'Express, GET', proc: express.proc, request: getTurn(express.url) },
    { name: 'Nest + Express, GET', proc: nest.proc, request: getTurn(nest.url) },
    { name: 'ours, GET /health/live', proc: ours.proc, request: getTurn(`${ours.url}/health/live`) },
    { name: 'ours, v3 turn', proc: ours.proc, request: shortConversations(ours.turn) },
    { name: 'baseline, turn', proc: baseline.proc, request: shortConversations(baseline.turn) },
  ];
  const cpu: Record<string, number[]> = {};
  try {
    for (const s of subjects) await runLoad(s.request, CONCURRENCY, 1000);
    for (let round = 1; round <= ROUNDS; round++) {
      process.stderr.write(`  round ${round}/${ROUNDS}\n`);
      for (const s of subjects) {
        const c0 = s.proc.cpuMs();
        await runLoad(s.request, CONCURRENCY, REQUESTS);
        (cpu[s.name] ??= []).push((s.proc.cpuMs() - c0) / REQUESTS);
      }
    }
  } finally {
    for (const p of [bare.proc, express.proc, nest.proc, ours.proc, baseline.proc, model]) await p.stop();
  }
  const m = (name: string) => median(cpu[name]!);
  const floor = m('node:http, GET');
  const turn = m('ours, v3 turn');
  const lines = [
    `# The platform's share of a turn (${new Date().toISOString()})`,
    '',
    `Server CPU per request at ${CONCURRENCY} connections, median of ${ROUNDS} alternating rounds of ${REQUESTS} requests.`,
    '',
    '| subject | CPU per request ms | ÷ node:http | rounds |',
    '|---|---|---|---|',
    ...subjects.map((s) => `| ${s.name} | ${m(s.name).toFixed(3)} | ${(m(s.name) / floor).toFixed(2)}× | ${cpu[s.name]!.map((x) => x.toFixed(3)).join(' ')} |`),
    '',
    "| layer | CPU per request ms | share of ours' v3 turn |",
    '|---|---|---|',
  ];
  const layers: [string, number][] = [
    ['node:http (parse, write)', floor],
    ['Express (router, req/res helpers, res.json)', m('Express, GET') - floor],
    ['Nest (routing context, pipes/guards/interceptors machinery, rxjs)', m('Nest + Express, GET') - m('Express, GET')],
    ["ours' HTTP layer (middleware, auth guard, telemetry span and interceptor, access line)", m('ours, GET /health/live') - m('Nest + Express, GET')],
    ['the turn itself (body, task transitions, store, history, model call, answer)', turn - m('ours, GET /health/live')],
  ];
  for (const [name, ms] of layers) lines.push(`| ${name} | ${ms.toFixed(3)} | ${((100 * ms) / turn).toFixed(1)} % |`);
  const platformShare = (100 * (m('Nest + Express, GET') - floor)) / turn;
  lines.push('', `The platform (Express + Nest above node:http): ${platformShare.toFixed(1)} % of ours' turn (issue 27: a proposal to leave it above 25 %).`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
