/**
 * A store stall while a stream follows, from another replica, a request that runs elsewhere
 * (docs/api.md, Streaming: "Reconnects that follow another replica"): the follower's own store
 * errors are not the request's outcome. It retries within a bound and, the store back, sends what
 * it missed and the real outcome; it never sends an `error` naming the request. The request
 * completes, and a reattach with the last id is answered 204.
 *
 * Redis: CLIENT PAUSE stalls the server for everyone (the replica running the request too).
 * DynamoDB Local and PostgreSQL: the follower's replica loses its connections (a TCP proxy taken
 * down and up).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import Redis from 'ioredis';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { getSse, openSse, parseSse, SseEvent } from '../support/sse-reader';
import { postgresStores } from '../support/postgres-stores';
import {
  createTestStateTable,
  DYNAMODB_LOCAL,
  RedisServerHandle,
  startRedisServer,
  testDynamoDbEndpoint,
  testPostgresUrl,
  uniqueName,
} from '../support/services';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';

const AGENT = v3Agent('Stall');
const STALL_MS = 3000;
const named = (events: SseEvent[]) =>
  events.filter((e) => e.event).map((e) => ({ id: e.id!, event: e.event!, data: JSON.parse(e.data) as Record<string, unknown> }));

interface Backend {
  name: string;
  /** Stores for the replica that runs (A) and the one that follows (B), and how to stall B's. */
  setup(): Promise<{ storeA: StateStore; storeB: StateStore; stall: () => Promise<void>; stop: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'redis (CLIENT PAUSE)',
    setup: async () => {
      const server: RedisServerHandle = await startRedisServer();
      const admin = new Redis(server.url);
      const keyPrefix = `${uniqueName('stall')}:`;
      return {
        storeA: new RedisStateStore({ url: server.url, keyPrefix }),
        storeB: new RedisStateStore({ url: server.url, keyPrefix }),
        stall: async () => void (await admin.call('CLIENT', 'PAUSE', String(STALL_MS), 'ALL')),
        stop: async () => {
          admin.disconnect();
          await server.stop();
        },
      };
    },
  },
  {
    name: 'dynamodb (connection lost)',
    setup: async () => {
      const table = uniqueName('stall');
      const endpoint = testDynamoDbEndpoint();
      const client = new DynamoDBClient({ endpoint, ...DYNAMODB_LOCAL });
      await createTestStateTable(table);
      client.destroy();
      const proxy: TcpProxy = await startTcpProxy(Number(new URL(endpoint).port));
      return {
        storeA: new DynamoDbStateStore({ table, endpoint, ...DYNAMODB_LOCAL }),
        storeB: new DynamoDbStateStore({ table, endpoint: `http://127.0.0.1:${proxy.port}`, ...DYNAMODB_LOCAL, requestTimeoutMs: 500 }),
        stall: async () => {
          await proxy.down();
          setTimeout(() => void proxy.up(), STALL_MS);
        },
        stop: () => proxy.close(),
      };
    },
  },
  {
    name: 'postgres (connection lost)',
    setup: async () => {
      const { store, schema } = await postgresStores('stall');
      const url = new URL(testPostgresUrl());
      const proxy: TcpProxy = await startTcpProxy(Number(url.port));
      const proxied = Object.assign(new URL(url), { port: String(proxy.port) }).toString();
      return {
        storeA: store(),
        storeB: new PostgresStateStore({ url: proxied, schema, acquireTimeoutMs: 500 }),
        stall: async () => {
          await proxy.down();
          setTimeout(() => void proxy.up(), STALL_MS);
        },
        stop: () => proxy.close(),
      };
    },
  },
];

describe.each(backends)('a follower during a store stall, on $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  let stall: () => Promise<void>;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const backend = await setup();
    ({ stall, stop } = backend);
    // The lease outlasts the stall: the running request keeps its task through it.
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_TASK_LEASE_MS: '6000', TA_LOG_LEVEL: 'warn' };
    a = await startTestApp({ agents: { 's.yaml': AGENT }, env, store: backend.storeA });
    b = await startTestApp({ agents: { 's.yaml': AGENT }, env, store: backend.storeB });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
    await stop?.();
  });

  it('sends no error naming the request; after the stall, the rest of the stream and the real outcome; then 204', async () => {
    let more!: () => void;
    llm.script(reply.chunks(['before ', 'the '], { steps: [{ until: new Promise<void>((r) => (more = r)), chunks: ['stall ', 'and after'] }] }));
    const original = await openSse(`${a.url}/Stall/1/sse`, { items: [text('go')] });
    await original.readUntil((so) => so.split('event: partial-response').length > 2);
    const taskId = named(parseSse(original.text()))[0]!.data.task_id as string;

    // B follows the request from the store (it runs on A) and has sent what A stored so far.
    const follower = await getSse(`${b.url}/Stall/1/tasks/${taskId}/stream`);
    expect(follower.status).toBe(200);
    await follower.readUntil((so) => so.split('event: partial-response').length > 2);

    await stall();
    more(); // the model finishes while the store does not answer
    const live = named(parseSse(await original.readAll()));
    expect(live.at(-1)).toMatchObject({ event: 'final-response', data: { status: 'Completed' } });

    const followed = named(parseSse(await follower.readAll()));
    expect(followed.filter((e) => e.event === 'error')).toEqual([]);
    expect(followed).toEqual(live); // every event once, with A's ids and data

    const task = await request(`${b.url}/Stall/1/tasks/${taskId}`);
    expect(task.body.requests.map((r: { status: string; output: string }) => [r.status, r.output])).toEqual([['Completed', 'before the stall and after']]);
    const again = await getSse(`${b.url}/Stall/1/tasks/${taskId}/stream`, { 'last-event-id': live.at(-1)!.id });
    expect(again.status).toBe(204);
  }, 30_000);
});
