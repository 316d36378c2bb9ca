/**
 * `npm run bench`: v3 invoke throughput, latency and server CPU per turn per state store, against
 * a bare Node HTTP baseline doing the same stateful turn, both talking to the same instant model
 * server, measured as neighbours in the same run; start-up time, idle memory, and the state
 * store's round trips per turn. Prints a Markdown report; it asserts nothing (this is not a test).
 *
 * On Redis, DynamoDB and PostgreSQL (BENCH_SAME_STORE, `0` for none) a second baseline keeps its
 * histories in that store (one read and one write a turn), a neighbour in the same rounds: ours ÷
 * it is how far our store path is from the store's own floor (information beside the issue's
 * ratios to the Map baseline; CPU per turn at c=16 within 1.5× of it is issue 27's target on each store).
 *
 * On the stores BENCH_ENTRA names (default `memory`; `0` for none) our server is measured a second
 * time with Entra ID auth against a local OpenID issuer, as a third neighbour (bench/entra-auth.ts).
 *
 * On the stores BENCH_ARCHIVE names (default `memory`; `0` for none) it is measured once more with
 * the audit archive on (TA_ARCHIVE_URL at the run's PostgreSQL, started for it if the run has no
 * postgres store; a schema of its own), another neighbour: archive ÷ none is the cost of archiving
 * on a turn (issue 23). The archive's rows are counted after the rounds (none: the bench fails).
 *
 * The baseline calls the model over node:http with a keep-alive agent, as ours does. On the stores
 * BENCH_BASELINE_FETCH names (default `memory`; `0` for none) the same baseline calling it with
 * global fetch instead is one more neighbour, `baseline (fetch)`: information (fetch costs several
 * times the CPU a turn); the targets stay against the node:http baseline.
 *
 * On the stores BENCH_STREAM names (default all; `0` for none) the streamed turn is measured too:
 * ours POST /Bench/1/sse against the baseline's POST /turn/sse (the model streaming, each delta
 * forwarded), at c=1 and c=16, neighbours in the same rounds (bench/rounds.ts), in a section of
 * their own.
 *
 * With BENCH_CPU_PROF=<dir> it profiles instead (bench/profile.ts).
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWithPort, Proc } from './processes';
import { alternatingRounds, median, Sizes } from './rounds';
import { BaselineFigures, formatReport, PerTurnCounts, StoreReport } from './report';
import { archiveReceived, BenchArchive, benchArchive, countingTurns } from './archive';
import { startEntraAuth } from './entra-auth';
import { runLoad } from './load';
import { warmUp } from './measure';
import { BenchStores, startBenchStores, StoreEnv } from './stores';
import { perTurn } from './store-counters';
import { startBaseline, startOurs, streamedOf, Subject } from './subjects';
import { profileOurs } from './profile';
import { untilQuiet } from './proc-stats';

type Counting = Awaited<ReturnType<NonNullable<StoreEnv['counting']>>>;

const SIZES: Sizes = {
  c1Requests: Number(process.env.BENCH_C1_REQUESTS ?? 300),
  c16Requests: Number(process.env.BENCH_C16_REQUESTS ?? 1600),
  historyTurns: Number(process.env.BENCH_HISTORY_TURNS ?? 500),
  historySamples: Number(process.env.BENCH_HISTORY_SAMPLES ?? 20),
  rounds: Math.max(1, Number(process.env.BENCH_ROUNDS ?? 7)),
};
/** Turns stored after the rounds before RSS is read again (0: skipped). */
const STORED_TURNS = Number(process.env.BENCH_STORED_TURNS ?? 0);
/** Starts per store whose spawn-to-first-200 times give the median. */
const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 5);
/** Turns per phase when counting store round trips. */
const COUNT_TURNS = Number(process.env.BENCH_COUNT_TURNS ?? 50);
/** Stores on which the same-store baseline is measured too (`0`: none; memory has none). */
const SAME_STORE_STORES = new Set((process.env.BENCH_SAME_STORE ?? 'redis,dynamodb,postgres').split(','));
/** Stores on which ours is also measured with Entra auth (`0`: none). */
const ENTRA_STORES = new Set((process.env.BENCH_ENTRA ?? 'memory').split(','));
/** Stores on which ours is also measured with the audit archive on (`0`: none). */
const ARCHIVE_STORES = new Set((process.env.BENCH_ARCHIVE ?? 'memory').split(','));
/** Stores on which the baseline calling the model with fetch is a neighbour too (`0`: none). */
const FETCH_STORES = new Set((process.env.BENCH_BASELINE_FETCH ?? 'memory').split(','));
/** Stores on which the streamed turn is measured too (`0`: none). */
const STREAM_STORES = new Set((process.env.BENCH_STREAM ?? 'memory,redis,dynamodb,postgres').split(','));

/** RSS 1.5 s after start, then idle: after 10 turns and 2 s of rest. */
async function memoryAtRest(subject: Subject): Promise<{ rssAtStart: number; rssIdle: number }> {
  await sleep(1500);
  const rssAtStart = subject.proc.rssMiB();
  let id = await subject.turn(undefined);
  for (let i = 1; i < 10; i++) id = await subject.turn(i % 2 ? id : undefined);
  await sleep(2000);
  return { rssAtStart, rssIdle: subject.proc.rssMiB() };
}

/** RSS once `STORED_TURNS` more turns are stored (conversations of 10 turns). */
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
  await sleep(1000);
  return subject.proc.rssMiB();
}

/**
 * Store requests per first turn and per follow-on of the subject `start` spawns with the counting
 * env (see StoreEnv.counting): ours, or the same-store baseline; a server of its own.
 */
async function countRoundTrips(storeEnv: StoreEnv, start: (counting: Counting) => Promise<Subject>): Promise<PerTurnCounts | undefined> {
  if (!storeEnv.counting) return undefined;
  const counting = await storeEnv.counting();
  const { counter } = counting;
  const subject = await start(counting);
  try {
    await runLoad(subject.turn, 1, 10); // once-only work (script loading, first connections) stays out
    const ids: string[] = [];
    await sleep(300);
    const s0 = await counter.snapshot();
    for (let i = 0; i < COUNT_TURNS; i++) ids.push(await subject.turn(undefined));
    await sleep(300); // work a turn leaves after answering counts with it
    const s1 = await counter.snapshot();
    for (const id of ids) await subject.turn(id);
    await sleep(300);
    const s2 = await counter.snapshot();
    return { first: perTurn(s0, s1, COUNT_TURNS), followOn: perTurn(s1, s2, COUNT_TURNS) };
  } finally {
    await subject.proc.stop();
    await counter.close();
  }
}

/**
 * Spawn to the first 200, the median of SPAWNS starts, each on a quiet machine (untilQuiet: one
 * start alone catches a busy moment, e.g. a JVM's warm-up or a fresh database's writes).
 */
async function spawnToReady(storeEnv: StoreEnv, modelUrl: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < SPAWNS; i++) {
    await untilQuiet();
    const ours = await startOurs(storeEnv, modelUrl);
    times.push(ours.proc.spawnToReadyMs!);
    await ours.proc.stop();
  }
  return median(times);
}

/** The archive of ours with TA_ARCHIVE_URL on this store, in a schema of its own (BENCH_ARCHIVE), else undefined. */
async function archiveOf(storeEnv: StoreEnv, stores: BenchStores): Promise<BenchArchive | undefined> {
  return ARCHIVE_STORES.has(storeEnv.name) ? benchArchive(await stores.postgres(), storeEnv.name) : undefined;
}

async function measureStore(storeEnv: StoreEnv, baseline: Subject, modelUrl: string, stores: BenchStores): Promise<StoreReport> {
  process.stderr.write(`measuring ours (${storeEnv.name})\n`);
  const perTurnCounts = await countRoundTrips(storeEnv, (c) => startOurs(storeEnv, modelUrl, { env: c.env }));
  const baselineEnv = SAME_STORE_STORES.has(storeEnv.name) ? storeEnv.baselineEnv : undefined;
  const sameStorePerTurn = baselineEnv ? await countRoundTrips(storeEnv, (c) => startBaseline(modelUrl, c.baselineEnv)) : undefined;
  const archive = await archiveOf(storeEnv, stores);
  // With the archive on, the live store's round trips again (its archive index cleared per drain), in an archive of their own.
  const countedArchive = archive && storeEnv.counting ? benchArchive(await stores.postgres(), `${storeEnv.name}_counted`) : undefined;
  const archivePerTurn = countedArchive
    ? await countRoundTrips(storeEnv, (c) => startOurs(storeEnv, modelUrl, { env: c.env, extraEnv: countedArchive.env, variant: 'archive' })).finally(() =>
        countedArchive.drop(),
      )
    : undefined;
  const spawnToReadyMs = await spawnToReady(storeEnv, modelUrl);
  const ours = await startOurs(storeEnv, modelUrl);
  const entraAuth = ENTRA_STORES.has(storeEnv.name) ? await startEntraAuth() : undefined;
  let entra: Subject | undefined;
  let archived: ReturnType<typeof countingTurns> | undefined;
  let sameStore: Subject | undefined;
  let baselineFetch: Subject | undefined;
  try {
    const memory = await memoryAtRest(ours);
    await warmUp(ours); // JIT, connection pools
    if (entraAuth) {
      entra = await startOurs(storeEnv, modelUrl, { auth: entraAuth });
      await warmUp(entra); // and the identity provider's metadata and keys, fetched once
    }
    if (archive) {
      archived = countingTurns(await startOurs(storeEnv, modelUrl, { extraEnv: archive.env, variant: 'archive' }));
      await warmUp(archived); // and the archive's pool
    }
    if (baselineEnv) {
      sameStore = await startBaseline(modelUrl, baselineEnv);
      await warmUp(sameStore);
    }
    if (FETCH_STORES.has(storeEnv.name)) {
      baselineFetch = await startBaseline(modelUrl, { BASELINE_MODEL_CLIENT: 'fetch' });
      await warmUp(baselineFetch);
    }
    let streamed: { baseline: Subject; ours: Subject } | undefined;
    if (STREAM_STORES.has(storeEnv.name)) {
      streamed = { baseline: streamedOf(baseline), ours: streamedOf(ours) };
      await warmUp(streamed.baseline);
      await warmUp(streamed.ours);
    }
    const rounds = await alternatingRounds(baseline, ours, SIZES, { entra, archive: archived, sameStore, baselineFetch, streamed });
    const archiveEvents = archive && archived ? await archiveReceived(archive, archived) : undefined;
    const rssAfterStored = STORED_TURNS ? await rssAfterStoredTurns(ours) : undefined;
    const entraIdp = entraAuth?.idpRequests();
    return {
      store: storeEnv.name,
      spawnToReadyMs,
      ...memory,
      rssAfterStored,
      rounds,
      perTurn: perTurnCounts,
      sameStorePerTurn,
      archivePerTurn,
      entraIdp,
      archiveEvents,
    };
  } finally {
    await Promise.all([ours.proc.stop(), entra?.proc.stop(), archived?.proc.stop(), sameStore?.proc.stop(), baselineFetch?.proc.stop()]);
    await entraAuth?.stop();
    await archive?.drop().catch((err: Error) => process.stderr.write(`could not drop the archive schema ${archive.schema}: ${err.message}\n`));
  }
}

async function main(): Promise<void> {
  const model = await spawnWithPort(join(__dirname, 'fast-model.server.js'), {});
  const modelUrl = `http://127.0.0.1:${model.port}`;
  const stores = await startBenchStores();
  const procs: Proc[] = [model];
  try {
    if (process.env.BENCH_CPU_PROF) {
      process.stdout.write(await profileOurs(stores.envs[0]!, modelUrl, process.env.BENCH_CPU_PROF));
      return;
    }
    const baselineSubject = await startBaseline(modelUrl);
    procs.push(baselineSubject.proc);
    const baseline: BaselineFigures = await memoryAtRest(baselineSubject);
    await warmUp(baselineSubject);
    const reports: StoreReport[] = [];
    for (const storeEnv of stores.envs) reports.push(await measureStore(storeEnv, baselineSubject, modelUrl, stores));
    if (STORED_TURNS) baseline.rssAfterStored = await rssAfterStoredTurns(baselineSubject);
    process.stdout.write(formatReport(SIZES, baseline, reports, STORED_TURNS));
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await stores.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
