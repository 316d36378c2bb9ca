import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Measured } from '../../bench/measure';
import { PARSES } from '../../bench/postgres-counter';
import { Proc, spawnWithPort } from '../../bench/processes';
import { formatReport } from '../../bench/report';
import { Cells, Round } from '../../bench/rounds';
import { dynamoDbCountingProxy, perTurn, redisCounter, ROUND_TRIPS, StoreCounter } from '../../bench/store-counters';
import { postgresBenchEnv } from '../../bench/stores';
import { startBaseline, startOurs, Subject } from '../../bench/subjects';
import { ensureBuilt } from '../support/built-cli';
import { DYNAMODB_LOCAL, RedisServerHandle, startRedisServer, testDynamoDbEndpoint, testPostgresUrl, uniqueName, uniqueSchema } from '../support/services';

// The same-store baseline (bench/baseline.server.ts with BASELINE_STORE): the bare server keeping
// each history in Redis / DynamoDB / PostgreSQL with one read and one write a turn, the floor ours
// ÷ it is measured against. It must really answer turns, keep the history in the store (read back
// here with a client of our own), and cost exactly those two round trips; and the report must show
// it as information beside the issue's targets (on PostgreSQL, issue 22's CPU target against it).
// On PostgreSQL the bench's subjects as it starts them (bench/stores.ts: ours and that baseline,
// counted through the wire-protocol proxy) are run for a few turns. Nothing here is timed.

const NODE_OPTIONS = '--disable-warning=MODULE_TYPELESS_PACKAGE_JSON'; // the bench's servers run from source
const hello = (turns: number) => {
  const history = [{ role: 'system', content: 'You are terse.' }];
  for (let i = 0; i < turns; i++) history.push({ role: 'user', content: 'hello' }, { role: 'assistant', content: 'ok' });
  return history;
};

/** A first turn and two follow-ons each on `n` conversations; the counts per turn of each kind. */
async function countedTurns(baseline: Subject, counter: StoreCounter, n: number) {
  const s0 = await counter.snapshot();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await baseline.turn(undefined));
  const s1 = await counter.snapshot();
  for (const id of ids) for (let i = 0; i < 2; i++) expect(await baseline.turn(id)).toBe(id);
  const s2 = await counter.snapshot();
  return { ids, first: perTurn(s0, s1, n), followOn: perTurn(s1, s2, 2 * n) };
}

describe('the same-store baseline', () => {
  let model: Proc & { port: number };
  let modelUrl: string;
  beforeAll(async () => {
    model = await spawnWithPort(join(__dirname, '../../bench/fast-model.server.ts'), { NODE_OPTIONS });
    modelUrl = `http://127.0.0.1:${model.port}`;
  });
  afterAll(() => model?.stop());

  describe('on Redis', () => {
    // A redis-server of its own: the run's shared one counts other files' commands too.
    let server: RedisServerHandle;
    let baseline: Subject;
    let client: Redis;
    const prefix = uniqueName('same-store');
    beforeAll(async () => {
      server = await startRedisServer();
      baseline = await startBaseline(modelUrl, { NODE_OPTIONS, BASELINE_STORE: 'redis', BASELINE_REDIS_URL: server.url, BASELINE_KEY_PREFIX: prefix });
      client = new Redis(server.url);
    });
    afterAll(async () => {
      await client?.quit();
      await baseline?.proc.stop();
      await server?.stop();
    });

    it('keeps each history in Redis, with one GET and one SET a turn', async () => {
      const counter = redisCounter(server.url);
      try {
        const { ids, first, followOn } = await countedTurns(baseline, counter, 3);
        expect(first).toEqual({ [ROUND_TRIPS]: 2, get: 1, set: 1 });
        expect(followOn).toEqual({ [ROUND_TRIPS]: 2, get: 1, set: 1 });
        for (const id of ids) expect(JSON.parse((await client.get(`${prefix}:${id}`))!)).toEqual(hello(3));
      } finally {
        await counter.close();
      }
    });

    it('continues a conversation from what Redis holds, not from its own memory', async () => {
      const id = await baseline.turn(undefined);
      await client.set(`${prefix}:${id}`, JSON.stringify([{ role: 'system', content: 'planted' }]));
      await baseline.turn(id);
      expect(JSON.parse((await client.get(`${prefix}:${id}`))!)).toEqual([
        { role: 'system', content: 'planted' },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'ok' },
      ]);
    });
  });

  describe('on DynamoDB Local', () => {
    let proxy: StoreCounter & { url: string };
    let baseline: Subject;
    let client: DynamoDBClient;
    let doc: DynamoDBDocumentClient;
    const table = uniqueName('same-store');
    const prefix = uniqueName('same-store');
    beforeAll(async () => {
      proxy = await dynamoDbCountingProxy(testDynamoDbEndpoint());
      baseline = await startBaseline(modelUrl, {
        NODE_OPTIONS,
        BASELINE_STORE: 'dynamodb',
        BASELINE_DYNAMODB_ENDPOINT: proxy.url,
        BASELINE_DYNAMODB_TABLE: table,
        BASELINE_KEY_PREFIX: prefix,
        AWS_REGION: DYNAMODB_LOCAL.region,
        AWS_ACCESS_KEY_ID: DYNAMODB_LOCAL.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: DYNAMODB_LOCAL.credentials.secretAccessKey,
      });
      client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
      doc = DynamoDBDocumentClient.from(client);
    });
    afterAll(async () => {
      client?.destroy();
      await baseline?.proc.stop();
      await proxy?.close();
    });

    it('keeps each history in its own table, with one GetItem and one PutItem a turn', async () => {
      const { ids, first, followOn } = await countedTurns(baseline, proxy, 3);
      expect(first).toEqual({ [ROUND_TRIPS]: 2, GetItem: 1, PutItem: 1 });
      expect(followOn).toEqual({ [ROUND_TRIPS]: 2, GetItem: 1, PutItem: 1 });
      for (const id of ids) {
        const { Item } = await doc.send(new GetCommand({ TableName: table, Key: { pk: `${prefix}:${id}` }, ConsistentRead: true }));
        expect(JSON.parse(Item!.history as string)).toEqual(hello(3));
      }
    });
  });
});

describe("on PostgreSQL, as the bench runs it (bench/stores.ts, on the run's PostgreSQL)", () => {
  let model: Proc & { port: number };
  let modelUrl: string;
  const schema = uniqueSchema('bench_same_store');
  const storeEnv = () => postgresBenchEnv(testPostgresUrl(), schema);
  let db: Client;
  beforeAll(async () => {
    ensureBuilt();
    model = await spawnWithPort(join(__dirname, '../../bench/fast-model.server.ts'), { NODE_OPTIONS });
    modelUrl = `http://127.0.0.1:${model.port}`;
    db = new Client({ connectionString: testPostgresUrl() });
    await db.connect();
  }, 150_000);
  afterAll(async () => {
    await db?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await db?.end();
    await model?.stop();
  });

  /** Counts `n` first turns and two follow-ons each of the subject `start` gives, through a counting proxy of its own. */
  async function counted(start: (env: { env: Record<string, string>; baselineEnv: Record<string, string> }) => Promise<Subject>, n: number) {
    const { counter, ...envs } = await storeEnv().counting!();
    const subject = await start(envs);
    try {
      await subject.turn(undefined); // the pool's first connection (and ours: its clock sample) stays out
      return { subject, ...(await countedTurns(subject, counter, n)) };
    } finally {
      await subject.proc.stop();
      await counter.close();
    }
  }

  it('the same-store baseline keeps each history in its table, with one SELECT and one INSERT … ON CONFLICT a turn', async () => {
    const prefix = uniqueName('same-store');
    const { ids, first, followOn } = await counted((e) => startBaseline(modelUrl, { ...e.baselineEnv, NODE_OPTIONS, BASELINE_KEY_PREFIX: prefix }), 3);
    // Unnamed statements, each parsed as it is sent.
    expect(first).toEqual({ [ROUND_TRIPS]: 2, read: 1, insert: 1, [PARSES]: 2 });
    expect(followOn).toEqual({ [ROUND_TRIPS]: 2, read: 1, insert: 1, [PARSES]: 2 });
    for (const id of ids) {
      const { rows } = await db.query<{ history: string }>(`SELECT history FROM ${schema}.bench_baseline WHERE id = $1`, [`${prefix}:${id}`]);
      expect(JSON.parse(rows[0]!.history)).toEqual(hello(3));
    }
  }, 30_000);

  it('continues a conversation from what PostgreSQL holds, not from its own memory', async () => {
    const prefix = uniqueName('same-store');
    const baseline = await startBaseline(modelUrl, { ...storeEnv().baselineEnv!, NODE_OPTIONS, BASELINE_KEY_PREFIX: prefix });
    try {
      const id = await baseline.turn(undefined);
      await db.query(`UPDATE ${schema}.bench_baseline SET history = $2 WHERE id = $1`, [
        `${prefix}:${id}`,
        JSON.stringify([{ role: 'system', content: 'planted' }]),
      ]);
      await baseline.turn(id);
      const { rows } = await db.query<{ history: string }>(`SELECT history FROM ${schema}.bench_baseline WHERE id = $1`, [`${prefix}:${id}`]);
      expect(JSON.parse(rows[0]!.history)).toEqual([
        { role: 'system', content: 'planted' },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'ok' },
      ]);
    } finally {
      await baseline.proc.stop();
    }
  });

  it('ours answers on PostgreSQL in the schema the bench names, in at most 2 round trips a plain turn (one commit_task each way)', async () => {
    const { ids, first, followOn } = await counted((e) => startOurs(storeEnv(), modelUrl, { env: e.env }), 3);
    expect(first[ROUND_TRIPS]).toBeLessThanOrEqual(2);
    expect(followOn[ROUND_TRIPS]).toBeLessThanOrEqual(2);
    expect(followOn.commit_task).toBeGreaterThan(0);
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.tasks WHERE task_id = ANY($1)`, [ids]);
    expect(Number(rows[0]!.n)).toBe(ids.length);
  }, 30_000);
});

describe('formatReport with the same-store baseline', () => {
  const cells = (cpu: number, throughput: number, p50: number): Cells => {
    const m: Measured = { requests: 100, seconds: 1, throughput, p50, p95: p50, p99: p50, cpuMsPerTurn: cpu };
    return { c1: m, c16: m, history: m };
  };
  const sizes = { c1Requests: 100, c16Requests: 100, historyTurns: 10, historySamples: 5, rounds: 3 };
  const rounds: Round[] = [
    { baseline: cells(0.5, 1000, 1), ours: cells(3, 200, 6), sameStore: cells(1, 500, 2) },
    { baseline: cells(0.5, 1000, 1), ours: cells(4, 150, 8), sameStore: cells(1, 500, 2) },
    { baseline: cells(0.5, 1000, 1), ours: cells(2, 250, 5), sameStore: cells(1, 500, 2) },
  ];
  const counts = (rt: number, get: number) => ({ first: { [ROUND_TRIPS]: rt, get }, followOn: { [ROUND_TRIPS]: rt, get } });

  it('adds its row per round, a table of ours ÷ it without limits, and its round trips, keeping the targets against the Map baseline', () => {
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [{ store: 'redis', spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds, perTurn: counts(3, 2), sameStorePerTurn: counts(2, 1) }],
      0,
    );
    expect(report).toContain('Same-store baseline (redis)');
    expect(report).toContain('| 2 | same-store baseline | 500 | 2.00 |');
    expect(report).toContain('| median | same-store baseline | 500 | 2.00 |');
    const info = report.slice(report.indexOf('| information (ours ÷ same-store baseline'));
    expect(info).toContain('| CPU per turn at c=16 | 3.00× | 4.00× | 2.00× | **3.00×** |\n');
    expect(info).toContain('| throughput at c=16 | 0.40× | 0.30× | 0.50× | **0.40×** |\n');
    const rows = info.split('\n\n')[0]!.split('\n').slice(1); // below the title, which says "no limit"
    expect(rows.join('\n')).not.toMatch(/limit|met|≤|≥/);
    // The targets are still ours ÷ the Map baseline; on Redis, CPU per turn at c=16 ≤ 1.5× the same-store baseline too (issue 27).
    expect(report).toContain('| CPU per turn at c=16 | 6.00× | 8.00× | 4.00× | **6.00×** | ≤ 2.5× | NOT met |');
    expect(report.slice(report.indexOf('| target (ours ÷ same-store baseline'))).toContain(
      '| CPU per turn at c=16 | 3.00× | 4.00× | 2.00× | **3.00×** | ≤ 1.5× | NOT met |',
    );
    expect(report).toContain('| redis | ours | first | **3.00** |');
    expect(report).toContain('| redis | same-store baseline | follow-on | **2.00** |');
  });

  it('on PostgreSQL, adds the target of issues 22 and 27 (CPU per turn at c=16 ≤ 1.5× it) and judges our round trips against ≤ 2', () => {
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [
        {
          store: 'postgres',
          spawnToReadyMs: 500,
          rssAtStart: 90,
          rssIdle: 95,
          rounds: rounds.map((r, i) => ({ ...r, ours: cells([1.5, 1.7, 1.2][i]!, 300, 3) })),
          perTurn: { first: { [ROUND_TRIPS]: 2, commit_task: 2 }, followOn: { [ROUND_TRIPS]: 2.5, commit_task: 2, read: 0.5 } },
          sameStorePerTurn: { first: { [ROUND_TRIPS]: 2, read: 1, insert: 1 }, followOn: { [ROUND_TRIPS]: 2, read: 1, insert: 1 } },
        },
      ],
      0,
    );
    const target = report.slice(report.indexOf('| target (ours ÷ same-store baseline'));
    expect(target).toContain('| CPU per turn at c=16 | 1.50× | 1.70× | 1.20× | **1.50×** | ≤ 1.5× | met |');
    expect(target.split('\n\n')[0]!.split('\n')).toHaveLength(3); // CPU at c=16 alone; the rest stays information
    expect(report).toContain('| postgres | ours | first | **2.00** | 2.00 | 0.00 | commit_task 2.00 | ≤ 2, met |');
    expect(report).toContain('| postgres | ours | follow-on | **2.50** | 2.50 | 0.00 | commit_task 2.00, read 0.50 | ≤ 2, NOT met |');
    expect(report).toContain('| postgres | same-store baseline | first | **2.00** | 2.00 | 0.00 | read 1.00, insert 1.00 | |');
  });

  it("splits ours ÷ it into what the store adds to each turn and the rest of ours, from the memory store's section of the same run", () => {
    // Memory: ours 2× the Map baseline. Redis: ours 3×, the same-store baseline 1.6× (medians of neighbours).
    const memoryRounds: Round[] = [0.9, 1, 1.1].map((ours) => ({ baseline: cells(0.5, 1000, 1), ours: cells(ours, 500, 2) }));
    const redisRounds: Round[] = [1.4, 1.5, 1.6].map((ours) => ({ baseline: cells(0.5, 1000, 1), ours: cells(ours, 300, 3), sameStore: cells(0.8, 600, 2) }));
    const store = (name: string, r: Round[]) => ({ store: name, spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds: r });
    const report = formatReport(sizes, { rssAtStart: 50, rssIdle: 60 }, [store('memory', memoryRounds), store('redis', redisRounds)], 0);
    const section = report.slice(report.indexOf('## What each store adds to a turn'));
    expect(section).toContain('less ours on memory ÷ the Map baseline of the memory section (**2.00×**)');
    // Adds 3 − 2 = 1 to ours, 1.6 − 1 = 0.6 to the baseline; ours ÷ it 1.5 ÷ 0.8; 1.5 × 1.6 − 1 = 1.4.
    expect(section).toContain('| redis | 3.00× | 1.00 | 1.60× | 0.60 | 1.67× | 1.88× | 1.40× |');
    // Without the memory store in the run there is nothing to split by.
    expect(formatReport(sizes, { rssAtStart: 50, rssIdle: 60 }, [store('redis', redisRounds)], 0)).not.toContain('What each store adds');
  });

  it('leaves it out on the memory store (nothing to compare with)', () => {
    const memoryRounds = rounds.map(({ baseline, ours }) => ({ baseline, ours }));
    const report = formatReport(
      sizes,
      { rssAtStart: 50, rssIdle: 60 },
      [{ store: 'memory', spawnToReadyMs: 500, rssAtStart: 90, rssIdle: 95, rounds: memoryRounds }],
      0,
    );
    expect(report).not.toMatch(/same-store/i);
  });
});
