/**
 * Reattaching to a request that has ended (docs/api.md, Streaming: "The outcome's id, and 204"):
 * one answer on both reattach paths (`POST /sse` with `Last-Event-ID`, `GET /tasks/{id}/stream`),
 * on the replica that ran the request and on another one, on memory, Redis and DynamoDB. A client
 * that has not seen the outcome gets what it missed and the outcome, with the same ids everywhere; a
 * client whose id is the outcome's is answered 204 (nothing to replay), which stops an
 * `EventSource`. Never an empty 200 (an `EventSource` would reconnect to it forever), never the
 * outcome twice under two ids. A request that was not streamed has its outcome as its one event.
 */
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { openEventSource } from '../support/event-source-client';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { getSse, openSse, parseSse } from '../support/sse-reader';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text, v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const AGENT = v3Agent('Ended');

/** Each app gets its own store instance on the shared backend, like separate processes (memory: one store shared). */
const backends: { name: string; setup: () => Promise<() => StateStore> }[] = [
  {
    name: 'memory',
    setup: async () => {
      const shared = new MemoryStateStore();
      return () => shared;
    },
  },
  {
    name: 'redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('ended')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix });
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('ended');
      await createTestStateTable(table);
      return () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    },
  },
  {
    name: 'postgres',
    setup: async () => (await postgresStores('ended')).store,
  },
];

interface Answer {
  status: number;
  events: { id: string; event: string; data: Record<string, unknown> }[];
}

describe.each(backends)('reattaching to an ended request, two replicas sharing $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const newStore = await setup();
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
    a = await startTestApp({ agents: { 'e.yaml': AGENT }, env, store: newStore() });
    b = await startTestApp({ agents: { 'e.yaml': AGENT }, env, store: newStore() });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });

  const read = async (opened: ReturnType<typeof getSse>): Promise<Answer> => {
    const r = await opened;
    const events = parseSse(await r.readAll())
      .filter((e) => e.event)
      .map((e) => ({ id: e.id!, event: e.event!, data: JSON.parse(e.data) as Record<string, unknown> }));
    return { status: r.status, events };
  };
  /** Both reattach paths on one replica, with `id` (GET without one when undefined). */
  const viaGet = (app: TestApp, taskId: string, id?: string) => read(getSse(`${app.url}/Ended/1/tasks/${taskId}/stream`, id ? { 'last-event-id': id } : {}));
  const viaPost = (app: TestApp, taskId: string, id: string) =>
    read(openSse(`${app.url}/Ended/1/sse`, { task_id: taskId, items: [text('again')] }, { 'last-event-id': id }));
  /** Every way to reattach with `id`: each replica, each path. */
  const everyWay = (taskId: string, id: string) => Promise.all([viaGet(a, taskId, id), viaPost(a, taskId, id), viaGet(b, taskId, id), viaPost(b, taskId, id)]);

  it('a request that was not streamed: its outcome, under one id on either replica; that id is 204 on both paths', async () => {
    llm.script(reply.text('plain answer'));
    const done = await v3Client(`${a.url}/Ended/1`).say('not streamed');
    expect(done.status).toBe(200);
    const taskId = done.body.task_id as string;

    const [onA, onB] = await Promise.all([viaGet(a, taskId), viaGet(b, taskId)]);
    expect(onA.status).toBe(200);
    expect(onA.events.map((e) => e.event)).toEqual(['final-response']);
    expect(onA.events[0]!.data).toMatchObject({ task_id: taskId, request_id: done.body.request_id, status: 'Completed', content: { output: 'plain answer' } });
    expect(onB).toEqual(onA);

    const outcome = onA.events[0]!.id;
    for (const answer of await everyWay(taskId, outcome)) expect(answer).toEqual({ status: 204, events: [] });

    // A browser's EventSource: the outcome once, then the server's 204 stops it.
    const es = openEventSource(`${b.url}/Ended/1/tasks/${taskId}/stream`);
    await es.closed;
    expect(es.events).toEqual(onA.events);
    expect(es.connects.map((c) => c.lastEventId)).toEqual([null, outcome]);
    expect(llm.requests).toHaveLength(1); // nothing was invoked again
  }, 20_000);

  it('a request that was not streamed and failed: its error event, the same way', async () => {
    llm.script(reply.error(400));
    const failed = await v3Client(`${a.url}/Ended/1`).say('this fails');
    const taskId = failed.body.task_id as string;
    const onB = await viaGet(b, taskId);
    expect(onB.status).toBe(200);
    expect(onB.events.map((e) => e.event)).toEqual(['error']);
    expect(onB.events[0]!.data).toMatchObject({ code: failed.body.code, task_id: taskId, request_id: failed.body.request_id });
    expect(await viaGet(a, taskId)).toEqual(onB);
    for (const answer of await everyWay(taskId, onB.events[0]!.id)) expect(answer).toEqual({ status: 204, events: [] });
  }, 20_000);

  it('a streamed request: an earlier id replays exactly the rest, the same on every path and replica; the final id is 204', async () => {
    llm.script(reply.chunks(['one ', 'two ', 'three']));
    const first = await read(openSse(`${a.url}/Ended/1/sse`, { items: [text('count')] }));
    expect(first.events.map((e) => e.event)).toEqual(['partial-response', 'partial-response', 'partial-response', 'final-response']);
    const taskId = first.events[0]!.data.task_id as string;

    for (const answer of await everyWay(taskId, first.events[0]!.id)) expect(answer).toEqual({ status: 200, events: first.events.slice(1) });
    for (const answer of await everyWay(taskId, first.events.at(-1)!.id)) expect(answer).toEqual({ status: 204, events: [] });
    expect(await viaGet(b, taskId)).toEqual(first);
  }, 20_000);
});
