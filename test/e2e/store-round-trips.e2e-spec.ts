/**
 * Issue 14: a plain v3 turn costs at most two Redis round trips (admit, finish) on the replica that
 * wrote the task last — counted on a redis-server of this file's own with the bench's counter
 * (INFO stats reads; a script or a MULTI block is one) — and the cache that makes it so is never
 * trusted alone: a turn on the other replica reads the task first (four round trips).
 * Issue 21: an approval resume costs at most three round trips on the replica that wrote the task
 * last (two: the decision's commit and the finish), and a JSON resume reads no stream log.
 * Issue 22: the same on PostgreSQL, counted by a proxy reading the wire protocol (one ReadyForQuery
 * per round trip: bench/postgres-counter.ts) in front of the run's server, in a schema of this
 * file's own; finding a request by id is one statement there, so a cold resume costs one less; and
 * a follow-on turn parses no statement (the commit is prepared once per connection).
 */
import { Client } from 'pg';
import { CONNECTIONS, PARSES, postgresCountingProxy, ROUND_TRIPS_PER_CONNECTION } from '../../bench/postgres-counter';
import { perTurn, redisCounter, ROUND_TRIPS, StoreCounter } from '../../bench/store-counters';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { startRedisServer, testPostgresUrl, uniqueSchema } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Counted
version: 1
description: Agent whose store round trips are counted
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const GUARDED = `
apiVersion: tealagents/v1alpha1
name: Guarded
version: 1
description: Agent whose approval resumes are counted
spec:
  governance:
    autonomy_level: L1
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Notes]
`;
const NOTES_PLUGIN = `
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'wipe', description: 'Deletes a note', parameters: { type: 'object', properties: { id: { type: 'string' } } }, handler: ({ id }) => 'wiped ' + id },
] }];
`;
const TURNS = 10;

/** What the two replicas of a case share: their store, and the counters of what they ask of it. */
interface CountedStore {
  store(): StateStore;
  /** Round trips (and, with `commands`, what they did, stream log reads included). */
  counter(options: { commands: boolean }): StoreCounter;
  stop(): Promise<void>;
}

const backends: {
  name: string;
  start(): Promise<CountedStore>;
  /** The counter's key for a read of the stream log. */
  streamReads: string;
  expected: { turns: Record<'first' | 'followOn' | 'elsewhere', number>; resumes: Record<'warm' | 'cold', number> };
  /** Statements parsed per follow-on turn, where the counter sees them (PostgreSQL: the commits are prepared once per connection). */
  parsesPerFollowOn?: number;
}[] = [
  {
    name: 'Redis',
    // Its own redis-server: INFO's counters are the whole server's.
    start: async () => {
      const redis = await startRedisServer();
      return {
        store: () => new RedisStateStore({ url: redis.url, keyPrefix: 'rt:' }),
        counter: ({ commands }) => redisCounter(redis.url, { commands }),
        stop: () => redis.stop(),
      };
    },
    // The stream log is the only list a resume could read (`lrange`, from MONITOR).
    streamReads: 'lrange',
    // Cold resume: finding the request (two), reading the task and its requests (two), then the same two.
    expected: { turns: { first: 2, followOn: 2, elsewhere: 4 }, resumes: { warm: 2, cold: 6 } },
  },
  {
    name: 'PostgreSQL',
    start: async () => {
      const schema = uniqueSchema('round_trips');
      const prepared = new PostgresStateStore({ url: testPostgresUrl(), schema });
      await prepared.prepare();
      await prepared.close();
      const proxy = await postgresCountingProxy(Number(new URL(testPostgresUrl()).port));
      return {
        store: () => new PostgresStateStore({ url: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, schema }),
        // One proxy counts everything; closing a case's view of it leaves it counting.
        counter: () => ({ snapshot: () => proxy.snapshot(), close: async () => undefined }),
        stop: async () => {
          await proxy.close();
          const raw = new Client({ connectionString: testPostgresUrl() });
          await raw.connect();
          await raw.query(`DROP SCHEMA ${schema} CASCADE`);
          await raw.end();
        },
      };
    },
    streamReads: 'stream read',
    // Cold resume: finding the request (one), reading the task and its requests (two), then the same two.
    expected: { turns: { first: 2, followOn: 2, elsewhere: 4 }, resumes: { warm: 2, cold: 5 } },
    parsesPerFollowOn: 0,
  },
];

describe.each(backends)('store round trips per plain v3 turn ($name)', ({ start, streamReads, expected, parsesPerFollowOn }) => {
  let llm: FakeOpenAi;
  let shared: CountedStore;
  let a: TestApp;
  let b: TestApp;
  let counter: StoreCounter;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    shared = await start();
    const replica = () =>
      startTestApp({
        agents: { 'counted.yaml': AGENT, 'guarded.yaml': GUARDED, 'custom_plugins.js': NOTES_PLUGIN },
        // No lease sweep: a pass is a round trip of its own each few seconds (TA_LEASE_SWEEP_MS, 5 s),
        // which a slow machine's counted turns would take in (a first turn counted 2.2 under CI load).
        env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LEASE_SWEEP_MS: '0' },
        store: shared.store(),
      });
    [a, b] = await Promise.all([replica(), replica()]);
    counter = shared.counter({ commands: false });
    // Connections, script loading and the clock's first sample stay out of the counts.
    for (const t of [a, b]) {
      llm.script(reply.text('warm'));
      expect((await v3Client(`${t.url}/Counted/1`).say('warm up')).status).toBe(200);
    }
  });
  afterAll(async () => {
    await counter?.close();
    await Promise.all([a?.close(), b?.close()]);
    await shared?.stop();
    await llm?.close();
  });

  /**
   * Round trips per turn of `turns()` (which sends `TURNS` turns, one at a time); the counter's other
   * counts per turn in `counts`. A pool grows a connection when two of its statements first overlap,
   * which on a busy machine can fall in a count (CI: 2.2 a turn, once in the first turns and once in
   * the follow-ons): a connection's own round trips (start-up, clock sample) are not a turn's, and at
   * most one a replica is allowed.
   */
  async function counted(turns: () => Promise<void>, counts: Record<string, number> = {}): Promise<number> {
    const before = await counter.snapshot();
    await turns();
    Object.assign(counts, perTurn(before, await counter.snapshot(), TURNS));
    const connections = (counts[CONNECTIONS] ?? 0) * TURNS;
    expect(connections).toBeLessThanOrEqual(2);
    return Math.round(((counts[ROUND_TRIPS] ?? 0) - (connections * ROUND_TRIPS_PER_CONNECTION) / TURNS) * 1000) / 1000;
  }

  it('two per first turn and two per follow-on on the replica that served the task; four on the other', async () => {
    const api = v3Client(`${a.url}/Counted/1`);
    const ids: string[] = [];
    const first = await counted(async () => {
      for (let i = 0; i < TURNS; i++) {
        llm.script(reply.text(`answer ${i}`));
        const r = await api.say(`hello ${i}`);
        expect(r.status).toBe(200);
        ids.push(r.body.task_id);
      }
    });
    const followOnCounts: Record<string, number> = {};
    const followOn = await counted(async () => {
      for (const [i, id] of ids.entries()) {
        llm.script(reply.text(`again ${i}`));
        expect((await api.say('again', { task_id: id })).status).toBe(200);
      }
    }, followOnCounts);
    const elsewhere = await counted(async () => {
      for (const [i, id] of ids.entries()) {
        llm.script(reply.text(`there ${i}`));
        expect((await v3Client(`${b.url}/Counted/1`).say('over there', { task_id: id })).status).toBe(200);
      }
    });
    expect({ first, followOn, elsewhere }).toEqual(expected.turns);
    if (parsesPerFollowOn !== undefined) expect(followOnCounts[PARSES] ?? 0).toBe(parsesPerFollowOn);

    // And back on A, whose view is now stale: its cached commit loses, it reads, and the turn sees all of B's.
    llm.script(reply.text('back'));
    const back = await api.say('back on A', { task_id: ids[0] });
    expect(back.status).toBe(200);
    const seen = llm.requests.at(-1)!.body.messages.map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(seen.filter((c: string) => c.includes('over there'))).toHaveLength(1);
    expect(seen.filter((c: string) => c.includes('there 0'))).toHaveLength(1); // B's answer
    expect(seen.filter((c: string) => c.includes('again 0'))).toHaveLength(1);
  });

  it(`two per JSON approval resume on the replica that paused the task (at most three), ${expected.resumes.cold} on the other, and no stream log read`, async () => {
    // Its own counter, of what the round trips did: a stream log read would show.
    const commands = shared.counter({ commands: true });
    // Once it counts (Redis: MONITOR set up): what a MONITOR connection is fed before ioredis has
    // put it in monitor mode breaks its command queue.
    await commands.snapshot();
    try {
      /** TURNS paused requests on `on`, each waiting for one approval. */
      const paused = async (on: TestApp): Promise<string[]> => {
        const ids: string[] = [];
        for (let i = 0; i < TURNS; i++) {
          llm.script(reply.toolCalls([{ id: `w${i}`, name: 'Notes-wipe', arguments: JSON.stringify({ id: `n${i}` }) }], { text: 'On it.' }));
          const r = await v3Client(`${on.url}/Guarded/1`).say(`wipe ${i}`);
          expect(r.body.status).toBe('Paused');
          ids.push(r.body.request_id);
        }
        return ids;
      };
      const resumed = async (on: TestApp, ids: string[]) => {
        const before = await commands.snapshot();
        for (const [i, id] of ids.entries()) {
          llm.script(reply.text(`wiped ${i}`));
          const r = await postJson(`${on.url}/Guarded/1/tealagents/v1alpha1/resume/${id}`, { action: 'approve' });
          expect(r.status).toBe(200);
          expect(r.body.status).toBe('Completed');
        }
        const per = perTurn(before, await commands.snapshot(), TURNS);
        return { roundTrips: per[ROUND_TRIPS]!, streamReads: per[streamReads] ?? 0 };
      };
      const warm = await resumed(a, await paused(a));
      const cold = await resumed(b, await paused(a));
      // Warm: the decision's commit and the finish (the request's task is found in the writer's view).
      expect({ warm, cold }).toEqual({
        warm: { roundTrips: expected.resumes.warm, streamReads: 0 },
        cold: { roundTrips: expected.resumes.cold, streamReads: 0 },
      });
    } finally {
      await commands.close();
    }
  });
});
