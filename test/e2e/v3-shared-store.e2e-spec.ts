/**
 * Two application instances behind one store (as two replicas behind one Redis or one DynamoDB
 * table): the per-task rules hold across them. Invariant: with concurrent follow-ons spread over
 * both instances, each either succeeds whole or gets 409, and the stored history is exactly the
 * successful ones in order.
 */
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const AGENT = v3Agent('Shared', { description: 'Agent served by two instances' });

interface Backend {
  name: string;
  /** A fresh store instance on the shared backend (each app gets its own, like separate processes). */
  setup(): Promise<() => StateStore>;
}

const backends: Backend[] = [
  {
    name: 'redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('v3-shared')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix });
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('v3-shared');
      await createTestStateTable(table);
      return () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    },
  },
  {
    name: 'postgres',
    setup: async () => (await postgresStores('v3_shared')).store,
  },
];

describe.each(backends)('two instances sharing $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  let apiA: ReturnType<typeof v3Client>;
  let apiB: ReturnType<typeof v3Client>;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const newStore = await setup();
    // A lease long enough that a replica whose cores are busy (other test files, DynamoDB Local's
    // JVM) still renews it in time: a lapsed lease is recovered by the other replica, a correct
    // outcome (docs/api.md) but not the one these tests look for. A cancel reaches the running
    // request at its next renewal, a third of a lease later.
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_TASK_LEASE_MS: '3000' };
    a = await startTestApp({ agents: { 'shared.yaml': AGENT }, env, store: newStore() });
    b = await startTestApp({ agents: { 'shared.yaml': AGENT }, env, store: newStore() });
    apiA = v3Client(`${a.url}/Shared/1`);
    apiB = v3Client(`${b.url}/Shared/1`);
  }, 60_000);
  // A test that fails leaves no scripted replies to the next one.
  afterEach(() => llm.discard());
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });

  it('a task created on one instance is continued and read on the other', async () => {
    llm.script(reply.text('one'), reply.text('two'));
    const first = await apiA.say('first');
    const second = await apiB.say('second', { task_id: first.body.task_id });
    expect(second.status).toBe(200);
    const viaA = await apiA.task(first.body.task_id);
    const viaB = await apiB.task(first.body.task_id);
    expect(viaA.body).toEqual(viaB.body);
    expect(viaA.body.requests.map((r: { output: string }) => r.output)).toEqual(['one', 'two']);
  });

  it('a follow-on on the other instance gets 409 while a request runs', async () => {
    llm.script(reply.text('ready'));
    const first = await apiA.say('start');
    let release!: () => void;
    llm.script(reply.text('slow', { until: new Promise<void>((r) => (release = r)) }));
    const slow = apiA.say('slow', { task_id: first.body.task_id });
    await llm.waitForRequest(llm.requests.length);
    const busy = await apiB.say('meanwhile', { task_id: first.body.task_id });
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('TASK_BUSY');
    release();
    expect((await slow).status).toBe(200);
  });

  it('concurrent follow-ons over both instances: each whole or 409, history = the winners in order', async () => {
    llm.script(reply.text('base'));
    const first = await apiA.say('base');
    const taskId = first.body.task_id;
    const N = 16;
    for (let i = 0; i < N; i++) llm.script(reply.text(`answer ${i}`, { delayMs: 40 }));
    const results = await Promise.all(Array.from({ length: N }, (_, i) => (i % 2 ? apiB : apiA).say(`question ${i}`, { task_id: taskId })));
    expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    const stored = (await apiB.task(taskId)).body.requests.slice(1);
    // The winners, each once, in the order the store admitted them (seq): which of them a client
    // sent first says nothing of that order (one can finish before another is even read).
    const ids = (list: { request_id: string }[]) => list.map((r) => r.request_id).sort();
    expect(ids(stored)).toEqual(ids(winners.map((w) => w.body)));
    for (const [i, r] of stored.entries()) {
      expect(r.status).toBe('Completed');
      expect(r.seq).toBe(i + 1);
      expect(r.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    }
  }, 60_000);

  it('a cancel sent to the other instance reaches the running request through the store', async () => {
    llm.script(reply.text('ready'));
    const first = await apiA.say('start');
    const taskId = first.body.task_id;
    llm.script(reply.hang());
    const pending = apiA.say('long', { task_id: taskId });
    const call = await llm.waitForRequest(llm.requests.length);
    const cancel = await postJson(`${b.url}/Shared/1/tasks/${taskId}/cancel`, {});
    expect(cancel.status).toBe(202);
    await call.disconnected; // instance A aborted its model call on its next lease renewal
    expect((await pending).body.status).toBe('Canceled');
    const task = await apiB.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Canceled']);
  }, 30_000);

  // Found by the soak (issue 28): the model answers after the other instance answered the cancel
  // 202 but before this one's next renewal saw it. A cancel answered 202 must still end the request
  // Canceled; it was stored Completed.
  it('a cancel answered 202 wins over an answer that comes before the running instance renews its lease', async () => {
    llm.script(reply.text('ready'));
    const taskId = (await apiA.say('start')).body.task_id;
    let answer!: () => void;
    llm.script(reply.text('too late', { until: new Promise<void>((r) => (answer = r)) }));
    const pending = apiA.say('long', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);
    const cancel = await postJson(`${b.url}/Shared/1/tasks/${taskId}/cancel`, {});
    expect(cancel.status).toBe(202);
    answer(); // at once: instance A's next renewal is up to a third of a lease (1 s) away
    const res = await pending;
    expect([res.status, res.body.status, res.body.content?.reason]).toEqual([200, 'Canceled', 'canceled']);
    const task = await apiB.task(taskId);
    expect(task.body.requests.map((r: { status: string; reason?: string }) => [r.status, r.reason ?? null])).toEqual([
      ['Completed', null],
      ['Canceled', 'canceled'],
    ]);
    // The canceled answer is not replayed: the next turn's model input has the first turn only.
    llm.script(reply.text('next'));
    await apiA.say('after', { task_id: taskId });
    const input = llm.requests.at(-1)!.body.messages.map((m: { content: string }) => m.content);
    expect(input.filter((c: string) => c === 'too late')).toEqual([]);
  }, 30_000);
});
