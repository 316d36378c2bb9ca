import { postJson } from '../support/http';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { openSse, parseSse, startPost } from '../support/sse-reader';
import { AGENT_V2, CHAT_V1, SEQUENTIAL_V1 } from '../support/stateless-agents';
import { TestApp } from '../support/test-app';

/**
 * `POST /{name}/{version}/sse` of v1/v2 agents: the wire format byte for byte (upstream's
 * `get_sse_event_for_response`), Sequential intermediate results, keepalives while the model is
 * slow, errors before and after the stream started, and a client that leaves.
 */

const SSE_HEADERS = (h: Headers) => ({
  type: h.get('content-type'),
  cache: h.get('cache-control'),
  buffering: h.get('x-accel-buffering'),
});

function requestIdOf(text: string): string {
  const m = /"request_id":"([0-9a-f]{32})"/.exec(text);
  if (!m) throw new Error(`no request_id in:\n${text}`);
  return m[1];
}

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

describe('stateless SSE', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'chat.yaml': CHAT_V1, 'v2.yaml': AGENT_V2, 'seq.yaml': SEQUENTIAL_V1 }, env: { TA_API_KEY: 'sk-sse' } });
    ({ llm: fake, t } = app);
  });
  afterAll(() => app.close());

  it('frames a v1 stream exactly as upstream: partial-response per delta, then final-response', async () => {
    fake.script(reply.chunks(['Hel', 'lo ', 'world'], { usage: { prompt_tokens: 9, completion_tokens: 3 } }));
    const sse = await openSse(`${t.url}/ChatBot/1.0/sse`, { session_id: 's-1', chat_history: [{ role: 'user', content: 'hi' }] });
    expect(sse.status).toBe(200);
    expect(SSE_HEADERS(sse.headers)).toEqual({ type: 'text/event-stream; charset=utf-8', cache: 'no-cache', buffering: 'no' });
    const text = await sse.readAll();
    const rid = requestIdOf(text);
    const partial = (p: string) => frame('partial-response', { session_id: 's-1', source: 'ChatBot:1.0', request_id: rid, output_partial: p });
    expect(text).toBe(
      partial('Hel') +
        partial('lo ') +
        partial('world') +
        `event: final-response\ndata: {"session_id":"s-1","source":"ChatBot:1.0","request_id":"${rid}","token_usage":{"completion_tokens":3,"prompt_tokens":9,"total_tokens":12},"extra_data":null,"output_raw":"Hello world","output_pydantic":null}\n\n`,
    );
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('frames a v2alpha1 stream the same way, with a minted session id', async () => {
    fake.script(reply.chunks(['Done'], { usage: { prompt_tokens: 2, completion_tokens: 1 } }));
    const sse = await openSse(`${t.url}/HelperV2/0.2/sse`, { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'go' }] }] });
    const text = await sse.readAll();
    const rid = requestIdOf(text);
    const sid = /"session_id":"([0-9a-f]{32})"/.exec(text)![1];
    const head = { session_id: sid, source: 'HelperV2:0.2', request_id: rid };
    expect(text).toBe(
      frame('partial-response', { ...head, output_partial: 'Done' }) +
        frame('final-response', {
          ...head,
          token_usage: { completion_tokens: 1, prompt_tokens: 2, total_tokens: 3 },
          extra_data: null,
          output_raw: 'Done',
          output_pydantic: null,
        }),
    );
  });

  it('sends a Sequential agent’s earlier tasks as intermediate-task-response, streaming only the last', async () => {
    fake.script(
      reply.text('Plan for Oslo', { usage: { prompt_tokens: 10, completion_tokens: 3 } }),
      reply.chunks(['Take ', 'a coat'], { usage: { prompt_tokens: 20, completion_tokens: 2 } }),
    );
    const first = fake.requests.length;
    const sse = await openSse(`${t.url}/Planner/0.1/sse`, {
      session_id: 'seq-1',
      chat_history: [{ role: 'user', content: 'weather?' }],
      user_context: { city: 'Oslo' },
    });
    const text = await sse.readAll();
    const rid = requestIdOf(text);
    const head = { session_id: 'seq-1', source: 'Planner:0.1', request_id: rid };
    expect(text).toBe(
      frame('intermediate-task-response', {
        task_no: 1,
        task_name: 'restate',
        response: {
          ...head,
          token_usage: { completion_tokens: 3, prompt_tokens: 10, total_tokens: 13 },
          extra_data: null,
          output_raw: 'Plan for Oslo',
          output_pydantic: null,
        },
      }) +
        frame('partial-response', { ...head, output_partial: 'Take ' }) +
        frame('partial-response', { ...head, output_partial: 'a coat' }) +
        frame('final-response', {
          ...head,
          token_usage: { completion_tokens: 5, prompt_tokens: 30, total_tokens: 35 },
          extra_data: null,
          output_raw: 'Take a coat',
          output_pydantic: null,
        }),
    );
    const [restate, answer] = fake.requests.slice(first).map((r) => r.body);
    expect(restate.stream).toBe(false);
    expect(restate.messages).toEqual([
      { role: 'system', content: 'You plan.' },
      { role: 'user', content: 'weather?' },
      { role: 'user', content: 'Restate for Oslo.' },
    ]);
    expect(answer.stream).toBe(true);
    expect(answer.messages.at(-1)).toEqual({ role: 'user', content: 'Answer using: Plan for Oslo' });
  });

  it('reports a failure after the stream started as one `event: error` frame with the problem, and ends', async () => {
    fake.script(reply.streamThenFail(['one ', 'two ']));
    const sse = await openSse(`${t.url}/ChatBot/1.0/sse`, { session_id: 's-err', chat_history: [{ role: 'user', content: 'hi' }] });
    expect(sse.status).toBe(200);
    const text = await sse.readAll();
    const rid = requestIdOf(text);
    const partial = (p: string) => frame('partial-response', { session_id: 's-err', source: 'ChatBot:1.0', request_id: rid, output_partial: p });
    const errorFrame = text.slice((partial('one ') + partial('two ')).length);
    expect(text.startsWith(partial('one ') + partial('two '))).toBe(true);
    const events = parseSse(errorFrame);
    expect(events).toHaveLength(1);
    expect(events[0].event).toBe('error');
    expect(errorFrame).toBe(`event: error\ndata: ${events[0].data}\n\n`);
    expect(JSON.parse(events[0].data)).toEqual({
      type: 'urn:teal-agent-server:problem:llm-unavailable',
      title: 'Model provider unavailable',
      status: 502,
      detail: expect.any(String),
      instance: '/ChatBot/1.0/sse',
      code: 'LLM_UNAVAILABLE',
    });
  });

  it('answers a failure before anything was streamed with its real status as problem+json', async () => {
    fake.script(reply.error(429, { headers: { 'retry-after': '3' } }));
    const sse = await openSse(`${t.url}/ChatBot/1.0/sse`, { chat_history: [{ role: 'user', content: 'hi' }] });
    const text = await sse.readAll();
    expect(sse.status).toBe(429);
    expect(sse.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(sse.headers.get('retry-after')).toBe('3');
    expect(JSON.parse(text)).toMatchObject({ status: 429, code: 'LLM_RATE_LIMITED', instance: '/ChatBot/1.0/sse' });
  });

  it('refuses a bad body with a JSON 422 before any stream opens', async () => {
    const res = await postJson(`${t.url}/ChatBot/1.0/sse`, { chat_history: [{ role: 'robot', content: 'hi' }] });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.errors[0].field).toBe('chat_history.0.role');
  });

  it('aborts the model call when the client leaves a started stream', async () => {
    fake.script(reply.hang(['first ']));
    const index = fake.requests.length;
    const sse = await openSse(`${t.url}/ChatBot/1.0/sse`, { chat_history: [{ role: 'user', content: 'hi' }] });
    await sse.readUntil((text) => text.includes('"output_partial":"first "'));
    sse.abort();
    const call = await fake.waitForRequest(index);
    await call.disconnected; // resolves only when the app dropped its request to the provider
    expect(call.clientDisconnected).toBe(true);
  });

  it('aborts the model call when the client leaves before anything was streamed', async () => {
    fake.script(reply.hang());
    const index = fake.requests.length;
    const client = startPost(`${t.url}/ChatBot/1.0/sse`, { chat_history: [{ role: 'user', content: 'hi' }] });
    const call = await fake.waitForRequest(index);
    client.drop();
    await client.settled;
    await call.disconnected;
  });

  it('aborts the model call when the client leaves a plain (non-SSE) invoke', async () => {
    fake.script(reply.hang());
    const index = fake.requests.length;
    const client = startPost(`${t.url}/ChatBot/1.0`, { chat_history: [{ role: 'user', content: 'hi' }] });
    const call = await fake.waitForRequest(index);
    client.drop();
    await client.settled;
    await call.disconnected;
  });
});

describe('stateless SSE keepalive', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'chat.yaml': CHAT_V1 }, env: { TA_API_KEY: 'sk-sse', TA_SSE_KEEPALIVE_MS: '50' } });
    ({ llm: fake, t } = app);
  });
  afterAll(() => app.close());

  it('sends `: keepalive` comments while the model is slow, then the events', async () => {
    let release!: () => void;
    fake.script(reply.chunks(['late ', 'answer'], { until: new Promise<void>((r) => (release = r)) }));
    // The first keepalive is what commits the 200 and the SSE headers.
    const sse = await openSse(`${t.url}/ChatBot/1.0/sse`, { session_id: 'k', chat_history: [{ role: 'user', content: 'hi' }] });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await sse.readUntil((text) => text.includes(': keepalive\n\n'));
    expect(sse.text().startsWith(': keepalive\n\n')).toBe(true);
    release();
    const events = parseSse(await sse.readAll());
    const named = events.filter((e) => !e.comment);
    expect(events.filter((e) => e.comment).every((e) => e.comment === 'keepalive' && e.data === '')).toBe(true);
    expect(named.map((e) => e.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
    expect(JSON.parse(named[2].data).output_raw).toBe('late answer');
  });
});
