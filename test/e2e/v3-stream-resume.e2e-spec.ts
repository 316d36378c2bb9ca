/**
 * A client that reconnects to a v3 stream with `Last-Event-ID` gets what it missed (API.md §5):
 * exactly the missed events (and the rest live), from this replica's log when it served the stream,
 * else from the store's stream log, as `GET /tasks/{id}/stream` sends them.
 */
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { openSse, parseSse, SseEvent } from '../support/sse-reader';
import { testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { text, v3Client } from '../support/v3-client';
import { postJson } from '../support/http';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Resumable
version: 1
description: Agent whose streams can be resumed
spec:
  agent:
    name: default
    model: gpt-test
`;

const named = (events: SseEvent[]) => events.filter((e) => e.event);

describe('resuming a v3 stream with Last-Event-ID', () => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const keyPrefix = `${uniqueName('resume')}:`;
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
    a = await startTestApp({ agents: { 'r.yaml': AGENT }, env, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) });
    b = await startTestApp({ agents: { 'r.yaml': AGENT }, env, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });

  it('replays exactly the events after the given id, with the same ids and data', async () => {
    llm.script(reply.chunks(['one ', 'two ', 'three']));
    const first = named(parseSse(await (await openSse(`${a.url}/Resumable/1/sse`, { items: [text('count')] })).readAll()));
    expect(first.map((e) => e.id)).toEqual(['0-0', '0-1', '0-2', '0-3']);
    const taskId = JSON.parse(first[0]!.data).task_id;

    const again = await openSse(`${a.url}/Resumable/1/sse`, { task_id: taskId, items: [text('count')] }, { 'last-event-id': '0-1' });
    expect(again.status).toBe(200);
    const replayed = named(parseSse(await again.readAll()));
    expect(replayed).toEqual(first.slice(2));
    expect(llm.requests).toHaveLength(1); // nothing was invoked again
  });

  it('sends the missed events and then the rest live while the request still runs', async () => {
    llm.script(reply.text('base'));
    const base = await v3Client(`${a.url}/Resumable/1`).say('base');
    const taskId = base.body.task_id;
    llm.script(reply.hang(['partial ']));
    const original = await openSse(`${a.url}/Resumable/1/sse`, { task_id: taskId, items: [text('go')] });
    await original.readUntil((so) => so.includes('event: partial-response'));
    original.abort(); // the client goes away; the request goes on

    const resumed = await openSse(`${a.url}/Resumable/1/sse`, { task_id: taskId, items: [text('go')] }, { 'last-event-id': '1-0' });
    const cancel = await postJson(`${a.url}/Resumable/1/tasks/${taskId}/cancel`, {});
    expect(cancel.status).toBe(200);
    const events = named(parseSse(await resumed.readAll()));
    expect(events.map((e) => [e.id, e.event])).toEqual([
      ['1-1', 'cancelled'],
      ['1-2', 'final-response'],
    ]);
    expect(JSON.parse(events[1]!.data).status).toBe('Canceled');
  });

  it('on another replica, replays the same events from the store (their ids, never the next id of a partial for the outcome)', async () => {
    llm.script(reply.chunks(['stored ', 'answer']));
    const first = named(parseSse(await (await openSse(`${a.url}/Resumable/1/sse`, { items: [text('q')] })).readAll()));
    const taskId = JSON.parse(first[0]!.data).task_id;

    const elsewhere = await openSse(`${b.url}/Resumable/1/sse`, { task_id: taskId, items: [text('q')] }, { 'last-event-id': '0-0' });
    const events = named(parseSse(await elsewhere.readAll()));
    expect(events.map((e) => [e.id, e.event])).toEqual([
      ['0-1', 'partial-response'],
      ['0-2', 'final-response'],
    ]);
    expect(events).toEqual(first.slice(1));
    expect(JSON.parse(events[1]!.data)).toMatchObject({ task_id: taskId, status: 'Completed', content: { output: 'stored answer' } });
  });

  it('refuses a malformed id (422), a task of another user (401), and an unknown request (404)', async () => {
    llm.script(reply.text('x'));
    const t = await v3Client(`${a.url}/Resumable/1`).say('x');
    const sse = (headers: Record<string, string>, taskId = t.body.task_id) =>
      postJson(`${a.url}/Resumable/1/sse`, { task_id: taskId, items: [text('x')] }, headers);
    const bad = await sse({ 'last-event-id': 'nonsense' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe('Last-Event-ID');
    expect((await sse({ 'last-event-id': '0-0', 'x-dev-user': 'mallory' })).status).toBe(401);
    expect((await sse({ 'last-event-id': '7-0' })).status).toBe(404);
  });
});
