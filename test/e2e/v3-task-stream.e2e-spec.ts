/**
 * `GET /{name}/{version}/tasks/{task_id}/stream` (docs/api.md, Streaming): reattach to a task's
 * stream with a real SSE client (the `eventsource` package, the browser's EventSource semantics),
 * on two application instances sharing one Redis, then one DynamoDB table. Invariants: a client that names the last event
 * it got receives every later event of that request exactly once, with the ids and data the
 * original stream had, then the rest live, and the stream closes with the final event.
 */
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { openEventSource, ReceivedEvent } from '../support/event-source-client';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { getSse, openSse, parseSse, SseEvent } from '../support/sse-reader';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { text } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Attach
version: 1
description: Agent whose task streams can be reattached
spec:
  agent:
    name: default
    model: gpt-test
`;

const named = (events: SseEvent[]) =>
  events.filter((e) => e.event).map((e) => ({ id: e.id!, event: e.event!, data: JSON.parse(e.data) as Record<string, unknown> }));
const ids = (events: ReceivedEvent[]) => events.map((e) => `${e.id} ${e.event}`);
const isFinal = (events: ReceivedEvent[]) => events.some((e) => e.event === 'final-response');

/** Each app gets its own store instance on the shared backend, like separate processes. */
const backends: { name: string; setup: () => Promise<() => StateStore> }[] = [
  {
    name: 'redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('attach')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix });
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('attach');
      await createTestStateTable(table);
      return () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    },
  },
  {
    name: 'postgres',
    setup: async () => (await postgresStores('attach')).store,
  },
];

describe.each(backends)('reattaching to a task stream (GET /tasks/{task_id}/stream), two instances sharing $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  const path = (app: TestApp, taskId: string) => `${app.url}/Attach/1/tasks/${taskId}/stream`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const newStore = await setup();
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_SSE_KEEPALIVE_MS: '100' };
    a = await startTestApp({ agents: { 'a.yaml': AGENT }, env, store: newStore() });
    b = await startTestApp({ agents: { 'a.yaml': AGENT }, env, store: newStore() });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });

  /** Starts a streamed request on A that sends `partials` and then runs until canceled; resolves with its task id. */
  async function startHanging(partials: string[]) {
    llm.script(reply.hang(partials));
    const original = await openSse(`${a.url}/Attach/1/sse`, { items: [text('go')] });
    await original.readUntil((so) => so.split('event: partial-response').length > partials.length);
    const sent = named(parseSse(original.text()));
    return { original, sent, taskId: sent[0]!.data.task_id as string };
  }

  it('a finished task, on either replica: no id replays the whole last request and closes; the final id is 204, which stops an EventSource', async () => {
    const requestsBefore = llm.requests.length;
    llm.script(reply.chunks(['one ', 'two']));
    const first = named(parseSse(await (await openSse(`${a.url}/Attach/1/sse`, { items: [text('count')] })).readAll()));
    const taskId = first[0]!.data.task_id as string;

    const es = openEventSource(path(a, taskId));
    await es.closed; // replayed, closed by the server, reconnected with the final id, told 204: done
    expect(es.events).toEqual(first);
    expect(es.connects.map((c) => c.lastEventId)).toEqual([null, first.at(-1)!.id]);

    const elsewhere = openEventSource(path(b, taskId)); // the other replica replays it from the store, exactly
    await elsewhere.closed;
    expect(elsewhere.events).toEqual(first);
    expect(llm.requests.length).toBe(requestsBefore + 1); // nothing was invoked again
  }, 15_000);

  it('same replica, mid-run: exactly the missed events, then live, then the final event; the header wins over the query', async () => {
    const { original, sent, taskId } = await startHanging(['alpha ', 'beta ', 'gamma ']);
    original.abort();
    const es = openEventSource(`${path(a, taskId)}?last_event_id=nonsense`, { headers: { 'last-event-id': sent[0]!.id } });
    await es.until((got) => got.length === 2);
    expect(es.events).toEqual(sent.slice(1));
    expect((await postJson(`${a.url}/Attach/1/tasks/${taskId}/cancel`, {})).status).toBe(200);
    await es.until(isFinal);
    es.close();
    expect(ids(es.events)).toEqual(['0-1 partial-response', '0-2 partial-response', '0-3 cancelled', '0-4 final-response']);
    expect(es.events.at(-1)!.data).toMatchObject({ task_id: taskId, status: 'Canceled' });
  });

  it('another replica, mid-run, with ?last_event_id (an EventSource first connect): exactly the missed events, then live', async () => {
    const { original, sent, taskId } = await startHanging(['alpha ', 'beta ', 'gamma ']);
    original.abort(); // the client saw 0-0 only, then lost the connection
    await new Promise((r) => setTimeout(r, 250)); // A's batch of events reached the store
    const es = openEventSource(`${path(b, taskId)}?last_event_id=${sent[0]!.id}`);
    await es.until((got) => got.length === 2);
    expect(es.events).toEqual(sent.slice(1)); // the same ids and data A sent
    expect((await postJson(`${a.url}/Attach/1/tasks/${taskId}/cancel`, {})).status).toBe(200);
    await es.until(isFinal);
    es.close();
    expect(ids(es.events)).toEqual(['0-1 partial-response', '0-2 partial-response', '0-3 cancelled', '0-4 final-response']);
    expect(es.events.at(-1)!.data).toMatchObject({ task_id: taskId, status: 'Canceled' });
  });

  it('POST /sse with Last-Event-ID on the other replica, mid-run, answers as the GET does: exactly the missed events, then live, then the final event', async () => {
    const { original, sent, taskId } = await startHanging(['alpha ', 'beta ', 'gamma ']);
    original.abort(); // the client saw 0-0 only, then lost the connection
    await new Promise((r) => setTimeout(r, 250)); // A's batch of events reached the store
    const resumed = await openSse(`${b.url}/Attach/1/sse`, { task_id: taskId, items: [text('go')] }, { 'last-event-id': sent[0]!.id });
    await resumed.readUntil((so) => so.split('event: partial-response').length > 2);
    expect((await postJson(`${a.url}/Attach/1/tasks/${taskId}/cancel`, {})).status).toBe(200);
    const events = named(parseSse(await resumed.readAll()));
    expect(events.slice(0, 2)).toEqual(sent.slice(1)); // the same ids and data A sent
    expect(events.map((e) => `${e.id} ${e.event}`)).toEqual(['0-1 partial-response', '0-2 partial-response', '0-3 cancelled', '0-4 final-response']);
    expect(events.at(-1)!.data).toMatchObject({ task_id: taskId, status: 'Canceled' });
  });

  it("EventSource's own reconnect lands on the other replica with Last-Event-ID: the exact missed events, no duplicates", async () => {
    const { original, sent, taskId } = await startHanging(['one ', 'two ']);
    // Connects to A (no id: the whole current request), then, once cut, reconnects to B by itself,
    // when `away` lets it (its reconnect waits on it).
    let back!: () => void;
    const away = new Promise<void>((r) => (back = r));
    const es = openEventSource(path(a, taskId), {
      route: (attempt, url) => (attempt === 0 ? url : url.replace(a.url, b.url)),
      gate: (attempt) => (attempt === 0 ? undefined : away),
    });
    await es.until((got) => got.length === 2);
    es.cut();
    // While it is away, the request ends on A: those are the events it missed.
    expect((await postJson(`${a.url}/Attach/1/tasks/${taskId}/cancel`, {})).status).toBe(200);
    const live = named(parseSse(await original.readAll())); // the whole run, as A streamed it
    back();
    await es.until(isFinal);
    es.close();
    expect(es.connects.map((c) => [c.url.startsWith(a.url) ? 'A' : 'B', c.lastEventId])).toEqual([
      ['A', null],
      ['B', sent[1]!.id],
    ]);
    expect(es.events).toEqual(live); // every event once, with the ids and data A sent
    expect(ids(es.events)).toEqual(['0-0 partial-response', '0-1 partial-response', '0-2 cancelled', '0-3 final-response']);
  }, 15_000);

  it('sends keepalives while waiting; refuses a malformed id (422 last_event_id), another user (401), an unknown task (404)', async () => {
    const { taskId } = await startHanging(['wait ']);
    const waiting = await getSse(path(b, taskId), { 'last-event-id': '0-0' });
    expect(waiting.status).toBe(200);
    expect(waiting.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await waiting.readUntil((so) => so.split(': keepalive\n\n').length > 2);
    waiting.abort();

    const bad = await request(`${path(a, taskId)}?last_event_id=1_2`);
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe('last_event_id');
    const badHeader = await request(path(a, taskId), { headers: { 'last-event-id': 'x' } });
    expect(badHeader.status).toBe(422);
    expect((await request(path(a, taskId), { headers: { 'x-dev-user': 'mallory' } })).status).toBe(401);
    expect((await request(path(b, '00000000-0000-4000-8000-000000000000'))).status).toBe(404);
    expect((await request(path(a, taskId), { headers: { 'last-event-id': '9-0' } })).status).toBe(404);
    expect((await postJson(`${a.url}/Attach/1/tasks/${taskId}/cancel`, {})).status).toBe(200);
  });
});
