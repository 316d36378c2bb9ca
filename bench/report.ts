import { cpus } from 'node:os';
import { Measured } from './measure';
import { ROUND_TRIPS } from './store-counters';
import { CONNECTIONS, PARSES } from './postgres-counter';
import { ArchiveReceived, EVENTS_PER_PLAIN_TURN } from './archive';
import {
  ARCHIVE_RATIOS,
  ENTRA_TARGETS,
  FETCH_RATIOS,
  median,
  Ratio,
  ROUND_TRIP_LIMITS,
  Round,
  SAME_STORE_RATIOS,
  SAME_STORE_TARGETS,
  Sizes,
  STREAM_RATIOS,
  STREAM_TARGETS,
  StreamCells,
  Target,
  TARGETS,
} from './rounds';

/** Store requests per turn, averaged: on first turns and on follow-ons, by counter (see store-counters.ts). */
export interface PerTurnCounts {
  first: Record<string, number>;
  followOn: Record<string, number>;
}

/** Everything measured for one state store. */
export interface StoreReport {
  store: string;
  spawnToReadyMs: number;
  rssAtStart: number;
  rssIdle: number;
  rssAfterStored?: number;
  rounds: Round[];
  /** Store requests per plain v3 turn (undefined for the memory store). */
  perTurn?: PerTurnCounts;
  /** The same-store baseline's store requests per turn. */
  sameStorePerTurn?: PerTurnCounts;
  /** With the Entra variant: the requests its server made to the identity provider over the whole run. */
  entraIdp?: { metadata: number; jwks: number };
  /** Ours with the audit archive on: its store requests per turn (a server of its own, an archive of its own). */
  archivePerTurn?: PerTurnCounts;
  /** With the archive variant: what its archive received over the run. */
  archiveEvents?: ArchiveReceived;
}

export interface BaselineFigures {
  rssAtStart: number;
  rssIdle: number;
  rssAfterStored?: number;
}

const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '—');

export function formatReport(sizes: Sizes, baseline: BaselineFigures, stores: StoreReport[], storedTurns: number): string {
  const out: string[] = [];
  out.push(`# Benchmark (${new Date().toISOString()}, node ${process.version}, ${cpus().length} cores)`);
  out.push('');
  out.push(
    `Plain v3 invoke (non-streaming), ours with dev auth, telemetry, validation and info logging on as shipped, against a bare node:http baseline doing the same stateful turn; both call the same instant model server, ` +
      'the baseline over node:http with a keep-alive agent (one request a turn), as ours calls it. ' +
      `Per store ${sizes.rounds} alternating rounds (baseline, ours, baseline, …): c=1 ${sizes.c1Requests} turns, c=16 ${sizes.c16Requests} turns, ` +
      `then ${sizes.historySamples} follow-ons one at a time on a conversation of ${sizes.historyTurns} turns (growing by ${sizes.historySamples} a round). ` +
      `CPU = the server process's CPU time over the phase (the sum of its threads' /proc/<pid>/task/<tid>/schedstat, in ns) ÷ turns.`,
  );
  const withEntra = stores.filter((s) => s.rounds[0]?.entra).map((s) => s.store);
  if (withEntra.length) {
    out.push(
      '',
      `With Entra auth (${withEntra.join(', ')}; BENCH_ENTRA): ours again, a third neighbour in each phase (baseline, ours, ours with Entra auth; ours and its variants take turns in first place, rotated every round), with TA_AUTH_MODE=entra against a local OpenID issuer ` +
        '(discovery + JWKS, RS256 access tokens shaped like Entra v2.0 ones, a few minted once for one user and sent in turn); its keys are fetched on the first request and cached, so this is the per-request token check.',
    );
  }
  const withArchive = stores.filter((s) => s.rounds[0]?.archive).map((s) => s.store);
  if (withArchive.length) {
    out.push(
      '',
      `With the audit archive (${withArchive.join(', ')}; BENCH_ARCHIVE): ours again with TA_ARCHIVE_URL at the run's PostgreSQL (a schema of its own), another neighbour in each phase (ours and its variants take turns in first place, rotated every round). ` +
        "After each commit the server queues the task, and a drain on the next turn of the event loop derives the events and INSERTs them in one statement, then clears the live store's archive index: " +
        "work off the answer's path, counted in CPU per turn (the server process's; the archive's PostgreSQL's own is not). " +
        "Its latency shows where the drains share the event loop with the next turns, and where the archive's PostgreSQL, on the same machine, takes cores from the server and the load (on a small machine the latency ratios hold the database's work too). " +
        'Ours with ÷ without is the cost of archiving on a turn (issue 23): information, no limit. ' +
        `A plain turn leaves ${EVENTS_PER_PLAIN_TURN.length} events (${EVENTS_PER_PLAIN_TURN.join(', ')}); the archive's rows are counted after the rounds.`,
    );
  }
  const withSameStore = stores.filter((s) => s.rounds[0]?.sameStore).map((s) => s.store);
  if (withSameStore.length) {
    out.push(
      '',
      `Same-store baseline (${withSameStore.join(', ')}): the same bare node:http server keeping each conversation's history in that store with the least a stateful turn needs ` +
        '(Redis: one GET and one SET of the history JSON, ioredis; DynamoDB: one consistent GetItem and one PutItem of an item holding it, AWS SDK v3 DocumentClient, a table of its own; ' +
        'PostgreSQL: a bare SELECT and an INSERT … ON CONFLICT DO UPDATE of a row holding it, node-postgres, on one connection the turn takes from a pool, a table of its own), ' +
        'on the same Redis / DynamoDB Local / PostgreSQL, the last neighbour in each phase. Ours ÷ it leaves out what any server pays for that store (socket round trips, request signing, the wire protocol): information, ' +
        'except CPU per turn at c=16, which is a target on every store (within 1.5× of it: issue 27; issue 22 had asked 1.6× on PostgreSQL); the other targets stay ours ÷ the Map baseline.',
    );
  }
  const withFetch = stores.filter((s) => s.rounds[0]?.baselineFetch).map((s) => s.store);
  if (withFetch.length) {
    out.push(
      '',
      `Baseline (fetch) (${withFetch.join(', ')}; BENCH_BASELINE_FETCH): the same Map baseline calling the model with global fetch (undici) instead of keep-alive node:http, the last non-streamed neighbour in each phase: ` +
        'information (what fetch costs a turn), no limit; the targets stay ours ÷ the node:http baseline.',
    );
  }
  const withStream = stores.filter((s) => s.rounds[0]?.streamed).map((s) => s.store);
  if (withStream.length) {
    out.push(
      '',
      `Streamed turn (${withStream.join(', ')}; BENCH_STREAM): the same turn with the model streaming (stream: true, usage included; the fake model sends a role delta, 3 content deltas, the finish_reason, the usage, [DONE]). ` +
        'Ours: POST /Bench/1/sse with the same body, its SSE read to the end (the final-response event gives the task id for follow-ons). ' +
        'The baseline: POST /turn/sse, each content delta forwarded as one event: partial-response frame, then one event: final-response {conversation_id, output} once the history is stored (Map baseline, model over keep-alive node:http). ' +
        'Both streamed subjects are the processes above; in each round the c=1 and the c=16 phase end with the streamed baseline, then ours streamed (neighbours). Ratios ours ÷ streamed baseline: information, no limit.',
    );
  }
  for (const s of stores) out.push('', ...storeSection(s));
  out.push('', ...storeShareSection(stores));
  out.push('', ...startupSection(baseline, stores, storedTurns));
  out.push('', ...roundTripSection(stores));
  return `${out.join('\n')}\n`;
}

function storeSection(s: StoreReport): string[] {
  const lines = [`## ${s.store}`, ''];
  lines.push(
    '| round | subject | c=1 req/s | c=1 p50 ms | c=1 p95 ms | c=1 CPU ms/turn | c=16 req/s | c=16 p50 ms | c=16 p95 ms | c=16 CPU ms/turn | long p50 ms | long p95 ms | long CPU ms/turn |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  const row = (label: string, who: string, c1: Measured, c16: Measured, h: Measured) =>
    `| ${label} | ${who} | ${f(c1.throughput, 0)} | ${f(c1.p50, 2)} | ${f(c1.p95, 2)} | ${f(c1.cpuMsPerTurn, 2)} | ${f(c16.throughput, 0)} | ${f(c16.p50, 2)} | ${f(c16.p95, 2)} | ${f(c16.cpuMsPerTurn, 2)} | ${f(h.p50, 2)} | ${f(h.p95, 2)} | ${f(h.cpuMsPerTurn, 2)} |`;
  const who = (r: Round) => (['baseline', 'ours', 'entra', 'archive', 'sameStore', 'baselineFetch'] as const).filter((w) => r[w]);
  const label = {
    baseline: 'baseline',
    ours: 'ours',
    entra: 'ours, Entra auth',
    archive: 'ours with the archive',
    sameStore: 'same-store baseline',
    baselineFetch: 'baseline (fetch)',
  } as const;
  s.rounds.forEach((r, i) => {
    for (const w of who(r)) lines.push(row(String(i + 1), label[w], r[w]!.c1, r[w]!.c16, r[w]!.history));
  });
  for (const w of who(s.rounds[0]!)) {
    const m = (pick: (r: Round) => Measured, key: keyof Measured) => median(s.rounds.map((r) => pick(r)[key] as number));
    const med = (pick: (r: Round) => Measured): Measured => ({
      requests: 0,
      seconds: 0,
      throughput: m(pick, 'throughput'),
      p50: m(pick, 'p50'),
      p95: m(pick, 'p95'),
      p99: m(pick, 'p99'),
      cpuMsPerTurn: m(pick, 'cpuMsPerTurn'),
    });
    lines.push(
      row(
        'median',
        label[w],
        med((r) => r[w]!.c1),
        med((r) => r[w]!.c16),
        med((r) => r[w]!.history),
      ),
    );
  }
  lines.push('', ...ratioTable('target (ours ÷ baseline, neighbours)', TARGETS, s.rounds));
  if (s.rounds[0]!.entra) {
    lines.push('', ...ratioTable('target (ours with Entra auth ÷ ours with dev auth, neighbours)', ENTRA_TARGETS, s.rounds));
    const idp = s.entraIdp;
    if (idp)
      lines.push(
        '',
        `Identity provider requests by the Entra server over the whole run: metadata ${idp.metadata}, keys ${idp.jwks} (cached after the first request).`,
      );
  }
  if (s.rounds[0]!.archive) {
    lines.push('', ...ratioTable('information (ours with the archive ÷ ours without, neighbours; no limit)', ARCHIVE_RATIOS, s.rounds));
    const a = s.archiveEvents;
    if (a) lines.push('', archiveLine(a));
  }
  if (s.rounds[0]!.sameStore) {
    lines.push('', ...ratioTable(`information (ours ÷ same-store baseline, neighbours; no limit)`, SAME_STORE_RATIOS, s.rounds));
    const targets = SAME_STORE_TARGETS[s.store];
    if (targets) lines.push('', ...ratioTable('target (ours ÷ same-store baseline, neighbours)', targets, s.rounds));
  }
  if (s.rounds[0]!.baselineFetch) lines.push('', ...ratioTable('information (baseline (fetch) ÷ baseline, neighbours; no limit)', FETCH_RATIOS, s.rounds));
  if (s.rounds[0]!.streamed) lines.push('', ...streamedSection(s));
  return lines;
}

/** The streamed turn's figures at c=1 and c=16, per round and their median, and ours ÷ the streamed baseline. */
function streamedSection(s: StoreReport): string[] {
  const lines = [`### ${s.store}, streamed (SSE)`, ''];
  lines.push(
    '| round | subject | c=1 req/s | c=1 p50 ms | c=1 p95 ms | c=1 p99 ms | c=1 CPU ms/turn | c=16 req/s | c=16 p50 ms | c=16 p95 ms | c=16 p99 ms | c=16 CPU ms/turn |',
  );
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const cells = (m: Measured) => `${f(m.throughput, 0)} | ${f(m.p50, 2)} | ${f(m.p95, 2)} | ${f(m.p99, 2)} | ${f(m.cpuMsPerTurn, 2)}`;
  const row = (label: string, who: string, c: StreamCells) => `| ${label} | ${who} | ${cells(c.c1)} | ${cells(c.c16)} |`;
  const subjects = [
    ['baseline', 'baseline, streamed'],
    ['ours', 'ours, streamed'],
  ] as const;
  s.rounds.forEach((r, i) => {
    for (const [w, name] of subjects) lines.push(row(String(i + 1), name, r.streamed![w]));
  });
  for (const [w, name] of subjects) {
    const med = (pick: (r: Round) => Measured): Measured => {
      const m = (key: keyof Measured) => median(s.rounds.map((r) => pick(r)[key]));
      return { requests: 0, seconds: 0, throughput: m('throughput'), p50: m('p50'), p95: m('p95'), p99: m('p99'), cpuMsPerTurn: m('cpuMsPerTurn') };
    };
    lines.push(row('median', name, { c1: med((r) => r.streamed![w].c1), c16: med((r) => r.streamed![w].c16) }));
  }
  lines.push('', ...ratioTable('target (ours streamed ÷ baseline streamed, neighbours)', STREAM_TARGETS, s.rounds));
  lines.push('', ...ratioTable('information (ours streamed ÷ baseline streamed, neighbours; no limit)', STREAM_RATIOS, s.rounds));
  return lines;
}

/** What the archive received against what the archived subject's turns should have left there. */
function archiveLine(a: ArchiveReceived): string {
  const expected = a.turns * EVENTS_PER_PLAIN_TURN.length;
  const types = Object.entries(a.byType)
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');
  const verdict = a.events === expected ? 'all there' : a.events < expected ? `${expected - a.events} MISSING` : `${a.events - expected} more than expected`;
  return `Archive received: **${a.events}** events in ${a.schema}.events (${types}) for the ${a.turns} turns ours with the archive answered over the run (warm-up and long conversation included; × ${EVENTS_PER_PLAIN_TURN.length} = ${expected}): ${verdict}.`;
}

/** Ratios per round and their median; with limits (targets) a limit column and whether the median meets it. */
function ratioTable(title: string, ratios: (Ratio | Target)[], rounds: Round[]): string[] {
  const limited = ratios.some((t) => 'limit' in t);
  const lines = [`| ${title} | ${rounds.map((_, i) => `round ${i + 1}`).join(' | ')} | median |${limited ? ' limit | |' : ''}`];
  lines.push(`|---|${rounds.map(() => '---|').join('')}---|${limited ? '---|---|' : ''}`);
  for (const t of ratios) {
    const values = rounds.map(t.ratio);
    const med = median(values);
    let limit = '';
    if ('limit' in t) {
      const met = t.atLeast ? med >= t.limit : med <= t.limit;
      limit = ` ${t.atLeast ? '≥' : '≤'} ${t.limit}× | ${met ? 'met' : 'NOT met'} |`;
    }
    lines.push(`| ${t.label} | ${values.map((r) => `${f(r, 2)}×`).join(' | ')} | **${f(med, 2)}×** |${limit}`);
  }
  return lines;
}

/** The subjects of a round measured as non-streamed cells. */
type Measured16 = 'baseline' | 'ours' | 'sameStore';

/** CPU per turn at c=16, `top` ÷ `bottom` of each round (neighbours), the median over rounds. */
const c16Median = (rounds: Round[], top: Measured16, bottom: Measured16) => median(rounds.map((r) => r[top]!.c16.cpuMsPerTurn / r[bottom]!.c16.cpuMsPerTurn));

/**
 * What each store adds to a turn's CPU at c=16, ours' and the same-store baseline's, in turns of
 * the Map baseline (each a median of neighbours: ours on the store ÷ the Map baseline of its own
 * section, less ours on memory ÷ the Map baseline of the memory section; the same-store baseline ÷
 * the Map baseline, less 1). Ours ÷ the same-store baseline is (M + a) ÷ (1 + b) with M ours on
 * memory ÷ the Map baseline and a, b what the store adds to each; so it says which part of that
 * target is the store's path and which is the rest of our turn. Information, no limit; needs the
 * memory store in the same run.
 */
function storeShareSection(stores: StoreReport[]): string[] {
  const memory = stores.find((s) => s.store === 'memory');
  const compared = stores.filter((s) => s.rounds[0]?.sameStore);
  if (!memory || !compared.length) return [];
  const m = c16Median(memory.rounds, 'ours', 'baseline');
  const lines = ['## What each store adds to a turn', ''];
  lines.push(
    'CPU per turn at c=16, in turns of the Map baseline (medians of neighbours): ours on the store ÷ the Map baseline of its section, less ours on memory ÷ the Map baseline of the memory section ' +
      `(**${f(m, 2)}×**); the same-store baseline ÷ the Map baseline, less 1. Ours ÷ the same-store baseline ≈ (ours on memory + what the store adds to ours) ÷ (1 + what it adds to the baseline), ` +
      'so the last column is the memory turn (÷ the Map baseline) that would bring it to 1.5× with the store adding what it adds here. ' +
      'A store on the same 2 cores (DynamoDB Local is a JVM) also takes CPU from the server, counted in what it adds. Information, no limit.',
  );
  lines.push('');
  lines.push(
    "| store | ours on it ÷ Map baseline | adds to ours | same-store baseline ÷ Map baseline | adds to the baseline | ours' addition ÷ the baseline's | ours ÷ same-store baseline | ours on memory ÷ Map baseline for ≤ 1.5× |",
  );
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const s of compared) {
    const ours = c16Median(s.rounds, 'ours', 'baseline');
    const same = c16Median(s.rounds, 'sameStore', 'baseline');
    const oursAdds = ours - m;
    const sameAdds = same - 1;
    const vsSame = c16Median(s.rounds, 'ours', 'sameStore');
    lines.push(
      `| ${s.store} | ${f(ours, 2)}× | ${f(oursAdds, 2)} | ${f(same, 2)}× | ${f(sameAdds, 2)} | ${f(oursAdds / sameAdds, 2)}× | ${f(vsSame, 2)}× | ${f(1.5 * (1 + sameAdds) - oursAdds, 2)}× |`,
    );
  }
  return lines;
}

function startupSection(baseline: BaselineFigures, stores: StoreReport[], storedTurns: number): string[] {
  const lines = ['## Start-up and memory', ''];
  lines.push(
    `Spawn to the first 200 on /health/live (polled every 5 ms; the median of BENCH_SPAWNS starts, each once the machine is quiet: < 15 % busy over 250 ms, waited for at most 10 s; target ≤ 600 ms); RSS (VmRSS) 1.5 s after start, and idle: after 10 turns and 2 s of rest (target ≤ 100 MiB)${storedTurns ? `; and after the run plus ${storedTurns} more stored turns` : ''}.`,
  );
  lines.push('');
  lines.push(`| subject | spawn → first 200 ms | RSS at start MiB | RSS idle MiB |${storedTurns ? ' RSS after stored turns MiB |' : ''}`);
  lines.push(`|---|---|---|---|${storedTurns ? '---|' : ''}`);
  const extra = (v?: number) => (storedTurns ? ` ${f(v ?? NaN)} |` : '');
  lines.push(`| baseline | — | ${f(baseline.rssAtStart)} | ${f(baseline.rssIdle)} |${extra(baseline.rssAfterStored)}`);
  for (const s of stores) lines.push(`| ours (${s.store}) | ${f(s.spawnToReadyMs, 0)} | ${f(s.rssAtStart)} | ${f(s.rssIdle)} |${extra(s.rssAfterStored)}`);
  return lines;
}

function roundTripSection(stores: StoreReport[]): string[] {
  const counted = stores.filter((s) => s.perTurn);
  if (!counted.length) return [];
  const lines = ['## Store round trips per plain v3 turn', ''];
  lines.push(
    'Counted from outside the server over K turns one at a time (a first turn each on K new tasks, then one follow-on on each), ÷ K, on a separate server instance. ' +
      'Redis: round trips = INFO stats total_reads_processed (one read per pipeline / MULTI block / command sent alone); commands from MONITOR: those the server sent ' +
      "(a MULTI block's one by one beside MULTI and EXEC) and, as lua:…, those its scripts ran. " +
      'DynamoDB: HTTP requests through a counting proxy in front of DynamoDB Local, by X-Amz-Target. ' +
      'PostgreSQL: ReadyForQuery messages through a proxy reading the wire protocol (one per statement: a parameterised one is sent in one write), statements by the store function they call, else read / insert, and Parse messages as parse (a named prepared statement is parsed once per connection; unnamed ones each time). ' +
      `Targets, ours: ${Object.entries(ROUND_TRIP_LIMITS)
        .map(([store, n]) => `${store} ≤ ${n}`)
        .join(', ')} round trips a turn. ` +
      'The same-store baseline counted alike, for comparison (its floor: one read and one write). ' +
      "Ours with the archive (BENCH_ARCHIVE's stores) counted alike: the live store's requests only (the archive's PostgreSQL is reached directly, not through the counter), " +
      "the drains' clearing of the archive index (markArchived: one per drain, and with turns one at a time a drain follows each of a turn's commits, admit and finish, so up to 2 a turn, after the commit that queued it rather than before the answer) and a catch-up's reads of the index (listUnarchived) if one falls in the count; no target.",
  );
  lines.push('');
  lines.push('| store | subject | turn | round trips | commands sent | commands run by scripts | by command / operation | target |');
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const s of counted) {
    for (const [who, perTurn] of [
      ['ours', s.perTurn],
      ['ours with the archive', s.archivePerTurn],
      ['same-store baseline', s.sameStorePerTurn],
    ] as const) {
      if (!perTurn) continue;
      for (const [turn, counts] of [
        ['first', perTurn.first],
        ['follow-on', perTurn.followOn],
      ] as const) {
        const entries = Object.entries(counts).filter(([k]) => k !== ROUND_TRIPS);
        // PostgreSQL's Parse messages and connections made are listed, not counted as statements sent (a statement is counted at its Bind).
        const sum = (lua: boolean) => entries.filter(([k]) => k !== PARSES && k !== CONNECTIONS && k.startsWith('lua:') === lua).reduce((n, [, v]) => n + v, 0);
        const parts = entries.sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${f(v, 2)}`);
        const roundTrips = counts[ROUND_TRIPS] ?? 0;
        const limit = who === 'ours' ? ROUND_TRIP_LIMITS[s.store] : undefined;
        const target = limit === undefined ? '' : ` ≤ ${limit}, ${roundTrips <= limit ? 'met' : 'NOT met'}`;
        lines.push(`| ${s.store} | ${who} | ${turn} | **${f(roundTrips, 2)}** | ${f(sum(false), 2)} | ${f(sum(true), 2)} | ${parts.join(', ')} |${target} |`);
      }
    }
  }
  return lines;
}
