import { join } from 'node:path';
import { Client } from 'pg';
import { archiveReceived, BenchArchive, benchArchive, countingTurns } from '../../bench/archive';
import { Measured } from '../../bench/measure';
import { Proc, spawnWithPort } from '../../bench/processes';
import { formatReport } from '../../bench/report';
import { alternatingRounds, Cells, Round } from '../../bench/rounds';
import { perTurn, ROUND_TRIPS } from '../../bench/store-counters';
import { postgresBenchEnv } from '../../bench/stores';
import { startOurs, Subject } from '../../bench/subjects';
import { ensureBuilt } from '../support/built-cli';
import { testPostgresUrl, uniqueSchema } from '../support/services';

// The benchmark's archive variant (issue 23: the cost of archiving on a turn, ours with TA_ARCHIVE_URL
// ÷ ours without): the subject it measures really archives every turn it answers (the count the
// report gives and the bench fails on), its round trips to the live store are told apart, it takes
// its turn in the rotation of neighbours, and the report shows it. Nothing here is timed.

const NODE_OPTIONS = '--disable-warning=MODULE_TYPELESS_PACKAGE_JSON'; // the bench's servers run from source

describe('the archive subject (our built server with TA_ARCHIVE_URL at the run PostgreSQL)', () => {
  let model: Proc & { port: number };
  let modelUrl: string;
  const archives: BenchArchive[] = [];
  beforeAll(async () => {
    ensureBuilt();
    model = await spawnWithPort(join(__dirname, '../../bench/fast-model.server.ts'), { NODE_OPTIONS });
    modelUrl = `http://127.0.0.1:${model.port}`;
  }, 150_000);
  afterAll(async () => {
    for (const a of archives) await a.drop();
    await model?.stop();
  });

  it('on memory, archives the 3 events of each plain turn it answered, and fails loudly while the archive holds none', async () => {
    const archive = benchArchive(testPostgresUrl(), 'memory');
    archives.push(archive);
    expect(archive.schema).toMatch(/^bench_archive_\d+_[a-z0-9]+_memory$/);
    const ours = countingTurns(await startOurs({ name: 'memory', env: { TA_STATE_STORE: 'memory' } }, modelUrl, { extraEnv: archive.env, variant: 'archive' }));
    try {
      expect(ours.name).toBe('ours (memory, archive)');
      // Migrated at boot, nothing archived yet: the bench's check refuses it.
      await expect(archiveReceived(archive, { turns: () => 1 })).rejects.toThrow(/received no event over 1 turns/);
      let id = await ours.turn(undefined);
      for (let i = 0; i < 4; i++) id = await ours.turn(id);
      await ours.turn(undefined);
      expect(ours.turns()).toBe(6);
      const received = await archiveReceived(archive, ours);
      expect(received).toEqual({
        schema: archive.schema,
        turns: 6,
        events: 18,
        byType: { model_call: 6, request_accepted: 6, request_completed: 6 },
      });
    } finally {
      await ours.proc.stop();
    }
  }, 60_000);

  it("on PostgreSQL, counts the drain's clearing of the archive index apart (markArchived), the archive's own statements not at all", async () => {
    const schema = uniqueSchema('bench_archive_store');
    const storeEnv = postgresBenchEnv(testPostgresUrl(), schema);
    const archive = benchArchive(testPostgresUrl(), 'postgres_counted');
    archives.push(archive);
    const { counter, env } = await storeEnv.counting!();
    const ours = await startOurs(storeEnv, modelUrl, { env, extraEnv: archive.env, variant: 'archive' });
    try {
      await ours.turn(undefined); // the pool's first connection stays out
      await new Promise((r) => setTimeout(r, 300));
      const s0 = await counter.snapshot();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(await ours.turn(undefined));
        await new Promise((r) => setTimeout(r, 100)); // the drains a turn leaves, done before the next
      }
      await new Promise((r) => setTimeout(r, 300));
      const first = perTurn(s0, await counter.snapshot(), 3);
      expect(first.commit_task).toBeGreaterThan(0);
      // A drain follows each commit (admit, finish) unless the second comes before the first drain has taken the task.
      expect(first.markArchived).toBeGreaterThanOrEqual(1);
      expect(first.markArchived).toBeLessThanOrEqual(2);
      expect(first.insert).toBeUndefined(); // the archive's INSERTs go to PostgreSQL directly
      const received = await archive.received(4 * 3);
      expect(received.events).toBe(4 * 3);
    } finally {
      await ours.proc.stop();
      await counter.close();
      await archive.drop();
      await postgresDrop(schema);
    }
  }, 60_000);
});

async function postgresDrop(schema: string): Promise<void> {
  const client = new Client({ connectionString: testPostgresUrl() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

describe('alternatingRounds with the archive as a neighbour', () => {
  it('runs the baseline first, then ours and its variants with each in first place in turn, the same-store baseline last', async () => {
    const calls: string[] = [];
    const fake = (name: string): Subject => ({
      name,
      url: '',
      proc: { cpuMs: () => 0 } as unknown as Proc,
      turn: async (id) => {
        calls.push(name);
        return id ?? name;
      },
    });
    const sizes = { c1Requests: 1, c16Requests: 0, historyTurns: 1, historySamples: 0, rounds: 3 };
    const write = process.stderr.write;
    process.stderr.write = () => true;
    try {
      const rounds = await alternatingRounds(fake('baseline'), fake('ours'), sizes, {
        entra: fake('entra'),
        archive: fake('archive'),
        sameStore: fake('same'),
      });
      expect(Object.keys(rounds[0]!)).toEqual(['baseline', 'ours', 'entra', 'archive', 'sameStore']);
    } finally {
      process.stderr.write = write;
    }
    // The long conversations (one turn each), then per round its c=1 phase (one turn each).
    expect(calls.slice(0, 5)).toEqual(['baseline', 'ours', 'entra', 'archive', 'same']);
    expect(calls.slice(5, 10)).toEqual(['baseline', 'ours', 'entra', 'archive', 'same']);
    expect(calls.slice(10, 15)).toEqual(['baseline', 'entra', 'archive', 'ours', 'same']);
    expect(calls.slice(15, 20)).toEqual(['baseline', 'archive', 'ours', 'entra', 'same']);
  });

  it('with one variant, swaps ours and it every other round (as with Entra alone)', async () => {
    const calls: string[] = [];
    const fake = (name: string): Subject => ({
      name,
      url: '',
      proc: { cpuMs: () => 0 } as unknown as Proc,
      turn: async (id) => {
        calls.push(name);
        return id ?? name;
      },
    });
    const write = process.stderr.write;
    process.stderr.write = () => true;
    try {
      await alternatingRounds(
        fake('baseline'),
        fake('ours'),
        { c1Requests: 1, c16Requests: 0, historyTurns: 1, historySamples: 0, rounds: 2 },
        { archive: fake('archive') },
      );
    } finally {
      process.stderr.write = write;
    }
    expect(calls.slice(3)).toEqual(['baseline', 'ours', 'archive', 'baseline', 'archive', 'ours']);
  });
});

describe('formatReport with the archive variant', () => {
  const cells = (cpu: number, throughput: number, p50: number): Cells => {
    const m: Measured = { requests: 100, seconds: 1, throughput, p50, p95: p50, p99: p50, cpuMsPerTurn: cpu };
    return { c1: m, c16: m, history: m };
  };
  const sizes = { c1Requests: 100, c16Requests: 100, historyTurns: 10, historySamples: 5, rounds: 3 };
  const rounds: Round[] = [
    { baseline: cells(0.5, 1000, 1), ours: cells(2, 400, 2), archive: cells(2.2, 380, 2.1) },
    { baseline: cells(0.5, 1000, 1), ours: cells(2, 400, 2), archive: cells(2.6, 300, 2.6) },
    { baseline: cells(0.5, 1000, 1), ours: cells(2, 400, 2), archive: cells(2.4, 340, 2.4) },
  ];
  const counts = (rt: number, extra: Record<string, number> = {}) => ({
    first: { [ROUND_TRIPS]: rt, commit_task: 2, ...extra },
    followOn: { [ROUND_TRIPS]: rt, commit_task: 2, ...extra },
  });

  it('adds its row per round, a table of with ÷ without per round and its median, the rows the archive received, and its round trips', () => {
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [
        {
          store: 'postgres',
          spawnToReadyMs: 500,
          rssAtStart: 90,
          rssIdle: 95,
          rounds,
          perTurn: counts(2),
          archivePerTurn: counts(3, { markArchived: 1 }),
          archiveEvents: {
            schema: 'bench_archive_1_x_postgres',
            turns: 10,
            events: 30,
            byType: { model_call: 10, request_accepted: 10, request_completed: 10 },
          },
        },
      ],
      0,
    );
    expect(report).toContain('With the audit archive (postgres; BENCH_ARCHIVE)');
    expect(report).toContain('| 2 | ours with the archive | 300 | 2.60 |');
    expect(report).toContain('| median | ours with the archive | 340 | 2.40 |');
    const info = report.slice(report.indexOf('| information (ours with the archive ÷ ours without, neighbours; no limit)'));
    expect(info).toContain('| CPU per turn at c=16 | 1.10× | 1.30× | 1.20× | **1.20×** |\n');
    expect(info).toContain('| p50 at c=16 | 1.05× | 1.30× | 1.20× | **1.20×** |\n');
    expect(report).toContain(
      'Archive received: **30** events in bench_archive_1_x_postgres.events (model_call 10, request_accepted 10, request_completed 10) for the 10 turns',
    );
    expect(report).toContain('(warm-up and long conversation included; × 3 = 30): all there.');
    expect(report).toContain('| postgres | ours with the archive | first | **3.00** | 3.00 | 0.00 | commit_task 2.00, markArchived 1.00 | |');
    expect(report).toContain('| postgres | ours | first | **2.00** | 2.00 | 0.00 | commit_task 2.00 | ≤ 2, met |');
  });

  it('says how many events are missing', () => {
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [
        {
          store: 'memory',
          spawnToReadyMs: 500,
          rssAtStart: 90,
          rssIdle: 95,
          rounds,
          archiveEvents: { schema: 's', turns: 10, events: 27, byType: { model_call: 9, request_accepted: 9, request_completed: 9 } },
        },
      ],
      0,
    );
    expect(report).toContain('× 3 = 30): 3 MISSING.');
  });

  it('leaves it all out when the variant was not measured (BENCH_ARCHIVE=0)', () => {
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [{ store: 'memory', spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds: rounds.map(({ baseline, ours }) => ({ baseline, ours })) }],
      0,
    );
    expect(report).not.toContain('archive');
  });
});
