/**
 * `Idempotency-Key` across replicas (issue 24, item 1), on each shared store: Redis, DynamoDB
 * Local and PostgreSQL, two replicas on one store each. The same POST sent 20 times at once,
 * alternating between the replicas, runs the model and its tool exactly once, and every copy gets
 * the same answer; so does a follow-on. On Redis, a turn whose caller lost the answer (the
 * connection dropped after the commit, Redis paused with `CLIENT PAUSE` right after it) and who
 * retries on the other replica gets the one run's answer. (One replica, the in-memory store and
 * every route: v3-idempotency.e2e-spec.ts.)
 */
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import {
  createTestStateTable,
  DYNAMODB_LOCAL,
  RedisServerHandle,
  startRedisServer,
  testDynamoDbEndpoint,
  testPostgresUrl,
  uniqueName,
  uniqueSchema,
} from '../support/services';
import { writeOrdersPlugin } from '../support/orders-plugin';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';

const AGENT = v3Agent('Shop', { description: 'Places orders', plugins: ['Orders'], governance: { autonomy_level: 'L3' } });
const item = (content: string) => ({ items: [{ content_type: 'text', content }] });

interface Backend {
  name: string;
  /** A store factory over one fresh data set (one store per replica), and what to stop afterwards. */
  setup(): Promise<{ store: () => StateStore; redis?: RedisServerHandle; stop(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'Redis',
    setup: async () => {
      // Its own server: CLIENT PAUSE stops every client of it, and other files share the run's one.
      const redis = await startRedisServer();
      return { store: () => new RedisStateStore({ url: redis.url }), redis, stop: () => redis.stop() };
    },
  },
  {
    name: 'DynamoDB Local',
    setup: async () => {
      const table = uniqueName('idempotency');
      await createTestStateTable(table);
      return { store: () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }), stop: async () => undefined };
    },
  },
  {
    name: 'PostgreSQL',
    setup: async () => {
      const schema = uniqueSchema('idempotency');
      const store = () => new PostgresStateStore({ url: testPostgresUrl(), schema });
      const first = store();
      await first.prepare().finally(() => first.close());
      return { store, stop: async () => undefined };
    },
  },
];

describe.each(backends)('Idempotency-Key over $name, two replicas', ({ name, setup }) => {
  let llm: FakeOpenAi;
  let replicas: TestApp[];
  let backing: Awaited<ReturnType<Backend['setup']>>;
  let placed: (id: string) => number;
  const post = (i: number, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal) =>
    signal
      ? fetch(`${replicas[i % 2]!.url}${path}`, {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { ...headers, 'content-type': 'application/json' },
          signal,
        })
      : request(`${replicas[i % 2]!.url}${path}`, { method: 'POST', body, headers });

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    backing = await setup();
    const dir = writeAgentDir({ 'shop.yaml': AGENT });
    ({ placed } = writeOrdersPlugin(dir));
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_LOG_LEVEL: 'warn', TA_TASK_LEASE_MS: '5000' };
    replicas = await Promise.all([0, 1].map(() => startTestApp({ configPath: dir, env, store: backing.store() })));
  }, 60_000);
  afterEach(() => expect(llm.discard()).toBe(0));
  afterAll(async () => {
    await Promise.all((replicas ?? []).map((r) => r.close()));
    await backing?.stop();
    await llm?.close();
  });

  it('the same turn sent 20 times at once over both replicas runs once; every copy gets the same answer; a follow-on too', async () => {
    llm.script(reply.toolCalls([{ id: 'c1', name: 'Orders-place', arguments: '{"id":"storm"}' }]), reply.text('ordered once'));
    const before = llm.requests.length;
    const headers = { 'idempotency-key': randomUUID() };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i, '/Shop/1', item('order one'), headers)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const first = answers[0]!.body;
    expect(first).toMatchObject({ status: 'Completed', content: { output: 'ordered once' } });
    for (const a of answers) expect(a.body).toEqual(first);
    expect(llm.requests.length - before).toBe(2);
    expect(placed('storm')).toBe(1);

    llm.script(reply.toolCalls([{ id: 'c2', name: 'Orders-place', arguments: '{"id":"again"}' }]), reply.text('ordered again'));
    const followKey = { 'idempotency-key': randomUUID() };
    const follow = { ...item('one more'), task_id: first.task_id };
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i, '/Shop/1', follow, followKey)));
    expect(more.map((a) => a.status)).toEqual(Array(20).fill(200));
    for (const a of more) expect(a.body).toEqual(more[0]!.body);
    expect(more[0]!.body).toMatchObject({ status: 'Completed', task_id: first.task_id, content: { output: 'ordered again' } });
    expect(placed('again')).toBe(1);
    expect(llm.requests.length - before).toBe(4);
    const task = await request(`${replicas[1]!.url}/Shop/1/tasks/${first.task_id}`);
    expect(task.body.requests).toHaveLength(2);
  }, 60_000);

  // A pause of the whole store: Redis's CLIENT PAUSE (the other stores' stalls are the fault suites').
  if (name === 'Redis')
    it('a turn whose answer was lost after its commit (Redis paused right after it), retried on the other replica, runs once', async () => {
      let release!: () => void;
      llm.script(
        reply.toolCalls([{ id: 'l1', name: 'Orders-place', arguments: '{"id":"lost"}' }]),
        reply.text('ordered despite the pause', { until: new Promise<void>((r) => (release = r)) }),
      );
      const before = llm.requests.length;
      const headers = { 'idempotency-key': randomUUID() };
      const gone = new AbortController();
      const lost = post(0, '/Shop/1', item('order, then lose the answer'), headers, gone.signal) as Promise<Response>;
      // The turn is committed (its admission, then its tool's result) and the model answers next.
      await llm.waitForRequest(before + 1);
      const admin = new Redis(backing.redis!.url, { maxRetriesPerRequest: 0 });
      try {
        await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
        gone.abort();
        await lost.catch(() => undefined);
        // The caller retries on the other replica while the store is paused: 503 with Retry-After
        // (nothing can be known yet), so it retries again, as a client does, until it gets the answer.
        const retry = async () => {
          for (let attempt = 0; ; attempt++) {
            const res = (await post(1, '/Shop/1', item('order, then lose the answer'), headers)) as Awaited<ReturnType<typeof request>>;
            if (res.status !== 503 || attempt === 20) return res;
            expect(res.headers.get('retry-after')).toBe('1');
            await sleep(250);
          }
        };
        const answer = await Promise.all([retry(), sleep(300).then(release)]).then(([r]) => r);
        expect(answer.status).toBe(200);
        expect(answer.body).toMatchObject({ status: 'Completed', content: { output: 'ordered despite the pause' } });
      } finally {
        admin.disconnect();
      }
      expect(placed('lost')).toBe(1);
      expect(llm.requests.length - before).toBe(2);
    }, 60_000);
});
