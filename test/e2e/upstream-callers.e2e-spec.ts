import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { reply } from '../support/fake-openai.server';
import { rawPost } from '../support/raw-http';
import { parseSse } from '../support/sse-reader';

/**
 * Upstream's own callers post JSON without a Content-Type: the Assistant orchestrator's recipient
 * chooser and the Workflow orchestrator's invoker use python `requests.post(url, data=json_text)`.
 * FastAPI reads such a body as JSON, and so must we; any other declared type stays 415.
 */
const UPSTREAM = resolve(__dirname, '../fixtures/upstream');
const payload = (name: string) => readFileSync(join(UPSTREAM, 'payloads', name), 'utf8');
// The headers upstream's callers send (`Authorization: None` is dropped by requests): no Content-Type.
const ORCHESTRATOR_HEADERS = { taAgwKey: 'gateway-key' };

function expectProblem(res: { status: number; headers: Record<string, unknown>; body: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
}

describe('requests without Content-Type are read as JSON (upstream callers)', () => {
  let f: FakeModelApp;
  beforeAll(async () => {
    f = await startFakeModelApp({ configPath: join(UPSTREAM, 'orchestrated') });
  });
  afterAll(() => f.close());

  it('POST /{name}/{version}: the Assistant orchestrator AgentInput reaches the model, whole', async () => {
    f.llm.script(reply.text('4'));
    const res = await rawPost(`${f.t.url}/MathAgent/0.1`, payload('ao-agent-input.json'), ORCHESTRATOR_HEADERS);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'MathAgent:0.1', output_raw: '4' });
    // The body was parsed, not dropped: the three history messages are what the model got.
    const sent = f.llm.requests.at(-1)!.body.messages.map((m: { role: string; content: unknown }) => [m.role, m.content]);
    expect(sent).toEqual(
      expect.arrayContaining([
        ['user', 'What is 12 times 12?'],
        ['assistant', '144'],
        ['user', 'And divided by 3?'],
      ]),
    );
  });

  it('POST /{name}/{version}: demo 12 multimodal payload keeps its session_id and user_context', async () => {
    f.llm.script(reply.text('Try Tokyo.'));
    const res = await rawPost(`${f.t.url}/ContextAgent/0.1`, payload('multimodal-text-only.json'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ session_id: 'fixture-session-42', output_raw: 'Try Tokyo.' });
    expect(JSON.stringify(f.llm.requests.at(-1)!.body.messages)).toContain('Favourite Food: ramen');
  });

  it('POST .../sse streams the same answer', async () => {
    f.llm.script(reply.chunks(['Hel', 'lo']));
    const res = await rawPost(`${f.t.url}/ChatAgent/0.1/sse`, JSON.stringify({ chat_history: [{ role: 'user', content: 'hi' }] }));
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/event-stream/);
    const final = parseSse(res.text).find((e) => e.event === 'final-response');
    expect(JSON.parse(final!.data)).toMatchObject({ source: 'ChatAgent:0.1', output_raw: 'Hello' });
  });

  it('POST to a stateful (v3) agent creates its task the same way', async () => {
    f.llm.script(reply.text('noted'));
    const res = await rawPost(`${f.t.url}/StatefulAgent/0.1`, JSON.stringify({ items: [{ content_type: 'text', content: 'remember 7' }] }));
    expect(res.status).toBe(200);
    // `items` is required (at least one): Completed means the body was read.
    expect(res.body).toMatchObject({ status: 'Completed', task_id: expect.any(String) });
    expect(JSON.stringify(f.llm.requests.at(-1)!.body.messages)).toContain('remember 7');
  });

  it('a body that is not JSON, sent without Content-Type, is 415 MALFORMED_JSON (never reaches the model)', async () => {
    const before = f.llm.requests.length;
    expectProblem(await rawPost(`${f.t.url}/MathAgent/0.1`, 'chat_history=hi'), 415, 'MALFORMED_JSON');
    expect(f.llm.requests.length).toBe(before);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml'])(
    'an explicit Content-Type: %s stays 415 UNSUPPORTED_MEDIA_TYPE, even with a JSON body',
    async (type) => {
      const res = await rawPost(`${f.t.url}/MathAgent/0.1`, payload('ao-agent-input.json'), { 'content-type': type });
      expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(res.body.detail).toContain(JSON.stringify(type.split(';')[0]));
    },
  );

  it.each(['application/json', 'application/json; charset=utf-8', 'application/merge-patch+json'])(
    'an explicit JSON Content-Type (%s) is still read',
    async (type) => {
      f.llm.script(reply.text('ok'));
      const res = await rawPost(`${f.t.url}/MathAgent/0.1`, payload('ao-agent-input.json'), { 'content-type': type });
      expect(res.status).toBe(200);
    },
  );
});
