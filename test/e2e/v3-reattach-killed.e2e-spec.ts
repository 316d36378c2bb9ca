/**
 * A client reattaching after the replica running its request was killed (kill -9) mid-stream gets
 * the request's outcome (docs/api.md, Streaming: "The outcome's id, and 204"). The replica that
 * runs a request writes its events to the store in batches, so the stored log lags what its client
 * has seen; the outcome event must take an id after every id the client can have seen, and a
 * reattach with the client's `Last-Event-ID` must deliver it, on both reattach paths, on Redis and
 * on DynamoDB Local.
 *
 * Replica A is the built server (dist/) as a child process, killed with SIGKILL; it reaches the
 * store through a TCP proxy that holds its last batch (so the lag is made, not hoped for). Replica
 * B runs here, on the store directly.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { openEventSource } from '../support/event-source-client';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { openSse, parseSse, SseEvent } from '../support/sse-reader';
import {
  createTestStateTable,
  DYNAMODB_LOCAL,
  dynamoDbServerEnv,
  RedisServerHandle,
  startRedisServer,
  testDynamoDbEndpoint,
  uniqueName,
} from '../support/services';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const AGENT = v3Agent('Killed');
const LEASE = { TA_TASK_LEASE_MS: '1500' };
const named = (events: SseEvent[]) => events.filter((e) => e.event);
const nOf = (id: string) => Number(id.split('-')[1]);

interface Backend {
  name: string;
  /** The store's port, A's environment for a store at `port`, and B's store (on the real port). */
  setup(): Promise<{ port: number; envFor: (port: number) => Record<string, string>; store: () => StateStore; stop: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'redis',
    setup: async () => {
      const server: RedisServerHandle = await startRedisServer();
      return {
        port: server.port,
        envFor: (port) => ({ TA_STATE_STORE: 'redis', TA_REDIS_URL: `redis://127.0.0.1:${port}` }),
        store: () => new RedisStateStore({ url: server.url, keyPrefix: 'ta:' }), // the CLI's prefix
        stop: () => server.stop(),
      };
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('killed');
      const endpoint = testDynamoDbEndpoint();
      const client = new DynamoDBClient({ endpoint, ...DYNAMODB_LOCAL });
      await createTestStateTable(table);
      client.destroy();
      return {
        port: Number(new URL(endpoint).port),
        envFor: (port) => dynamoDbServerEnv(table, `http://127.0.0.1:${port}`),
        store: () => new DynamoDbStateStore({ table, endpoint, ...DYNAMODB_LOCAL }),
        stop: async () => undefined,
      };
    },
  },
  {
    name: 'postgres',
    setup: async () => {
      const { store, env } = await postgresStores('killed');
      const url = new URL(env.TA_POSTGRES_URL!);
      return {
        port: Number(url.port),
        envFor: (port) => ({ ...env, TA_POSTGRES_URL: Object.assign(new URL(url), { port: String(port) }).toString() }),
        store,
        stop: async () => undefined,
      };
    },
  },
];

jest.setTimeout(30_000);
beforeAll(ensureBuilt, 150_000);

describe.each(backends)('reattaching after the replica running the request was killed, on $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let proxy: TcpProxy;
  let a: CliRun;
  let b: TestApp;
  let store: StateStore;
  let stopStore: () => Promise<void>;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const backend = await setup();
    stopStore = backend.stop;
    proxy = await startTcpProxy(backend.port);
    const dir = writeAgentDir({ 'k.yaml': AGENT });
    const model = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', ...LEASE };
    a = runCli(['serve', dir, '--port', '0'], { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info', ...model, ...backend.envFor(proxy.port) }, { entry: 'dist' });
    store = backend.store();
    b = await startTestApp({ configPath: dir, env: { ...model, TA_LOG_LEVEL: 'warn' }, store });
    await a.listening();
  }, 60_000);
  afterAll(async () => {
    await a?.stop();
    await proxy?.close();
    await b?.close();
    await llm?.close();
    await stopStore?.();
  });

  it('the client saw partials the store never got; with its Last-Event-ID, another replica sends the ABANDONED outcome, then 204', async () => {
    const aUrl = `http://127.0.0.1:${await a.listening()}`;
    let more!: () => void;
    const later = ['three ', 'four ', 'five ', 'six ', 'seven '];
    llm.script(reply.hang(['zero ', 'one ', 'two '], { steps: [{ until: new Promise<void>((r) => (more = r)), chunks: later }] }));
    const original = await openSse(`${aUrl}/Killed/1/sse`, { items: [text('go')] });
    const partials = (so: string) => so.split('event: partial-response').length - 1;
    await original.readUntil((so) => partials(so) === 3);
    const taskId = JSON.parse(named(parseSse(original.text()))[0]!.data).task_id as string;
    // A's first batch reached the store; from now on what A writes is held, as by a slow network.
    for (let i = 0; i < 100 && ((await store.readStreamEvents(DEV_TENANT_ID, taskId, 0, -1)) ?? []).length < 3; i++)
      await new Promise((r) => setTimeout(r, 50));
    proxy.hold();
    more();
    await original.readUntil((so) => partials(so) === 8);
    const seen = named(parseSse(original.text()));
    const last = seen.at(-1)!.id!;
    expect(seen.map((e) => e.id)).toEqual(['0-0', '0-1', '0-2', '0-3', '0-4', '0-5', '0-6', '0-7']);

    a.child.kill('SIGKILL');
    await a.exited;
    await proxy.close(); // what A sent while held never reaches the store
    original.abort();
    expect(((await store.readStreamEvents(DEV_TENANT_ID, taskId, 0, -1)) ?? []).map((e) => e.n)).toEqual([0, 1, 2]);

    // GET /tasks/{id}/stream with the client's id (a browser EventSource, whose first connect names it in
    // the query): the outcome, then its own reconnect with the outcome's id is 204, which stops it.
    const es = openEventSource(`${b.url}/Killed/1/tasks/${taskId}/stream?last_event_id=${last}`);
    await es.closed;
    expect(es.events.map((e) => e.event)).toEqual(['error']);
    const outcome = es.events[0]!;
    expect(outcome.data).toMatchObject({ code: 'ABANDONED', status: 503, task_id: taskId });
    expect(nOf(outcome.id)).toBeGreaterThan(nOf(last)); // after every id the client saw
    expect(es.connects.map((c) => c.lastEventId)).toEqual([null, outcome.id]);

    // POST /sse with the same Last-Event-ID: the same outcome under the same id; its id is 204.
    const again = await openSse(`${b.url}/Killed/1/sse`, { task_id: taskId, items: [text('go')] }, { 'last-event-id': last });
    expect(again.status).toBe(200);
    expect(named(parseSse(await again.readAll())).map((e) => [e.id, e.event, JSON.parse(e.data).code])).toEqual([[outcome.id, 'error', 'ABANDONED']]);
    const done = await openSse(`${b.url}/Killed/1/sse`, { task_id: taskId, items: [text('go')] }, { 'last-event-id': outcome.id });
    expect(done.status).toBe(204);

    const task = (await request(`${b.url}/Killed/1/tasks/${taskId}`)).body;
    expect(task.requests.map((r: { status: string }) => r.status)).toEqual(['Failed']);
    expect(task.requests[0].error.code).toBe('ABANDONED');
  });
});
