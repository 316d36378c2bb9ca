/**
 * Background runs (issue 24, item 2; docs/api.md, Background runs): `Prefer: respond-async` on a
 * turn or a resume answers 202 at once with the request's ids, `Location` the task and
 * `Preference-Applied`, while the run goes on: the task reads Running, then Completed; its stream
 * can be reattached to; it pauses for approvals and is cancelled as any run. Real HTTP, only the
 * model vendor fake.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

const PLUGIN = `
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'wipe', description: 'Deletes a note', parameters: id, handler: ({ id }) => 'wiped ' + id },
] }];
`;
const AGENT = `
apiVersion: tealagents/v1alpha1
name: Runner
version: 1
description: Background runs
spec:
  governance:
    autonomy_level: L1
  limits:
    caller_concurrency: 1
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Notes]
`;
const ASYNC = { prefer: 'respond-async' };
const item = (content: string) => ({ items: [{ content_type: 'text', content }] });

describe('background runs (Prefer: respond-async)', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => request(`${t.url}/Runner/1${path}`, { method: 'POST', body, headers });
  const get = (path: string) => request(`${t.url}${path}`);

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({ 'runner.yaml': AGENT });
    writeFileSync(join(dir, 'custom_plugins.js'), PLUGIN);
    t = await startTestApp({ configPath: dir, env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' } });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  it('answers 202 at once while the model still works, then the task reads Completed; its stream replays the run', async () => {
    let release!: () => void;
    llm.script(reply.text('done in the background', { until: new Promise<void>((r) => (release = r)) }));
    const first = llm.requests.length;
    const res = await post('', item('take your time'), ASYNC);
    expect(res.status).toBe(202);
    expect(res.headers.get('preference-applied')).toBe('respond-async');
    expect(res.body).toEqual({ task_id: expect.any(String), session_id: expect.any(String), request_id: expect.any(String), status: 'Running' });
    const location = res.headers.get('location')!;
    expect(location).toBe(`/Runner/1/tasks/${res.body.task_id}`);
    // The model has not answered yet: the run is going on without the caller.
    await llm.waitForRequest(first);
    expect((await get(location)).body).toMatchObject({ status: 'Running', requests: [{ request_id: res.body.request_id, status: 'Running' }] });
    release();
    await waitFor(async () => expect((await get(location)).body).toMatchObject({ status: 'Completed', requests: [{ output: 'done in the background' }] }));
    const stream = await get(`${location}/stream`);
    expect(stream.text).toContain('event: final-response');
    expect(stream.text).toContain('done in the background');
  });

  it('a paused background run is resumed in the background too; a resume that rejects everything answers at once', async () => {
    llm.script(reply.toolCalls([{ id: 'w1', name: 'Notes-wipe', arguments: '{"id":"a"}' }]));
    const res = await post('', item('wipe a'), ASYNC);
    expect(res.status).toBe(202);
    await waitFor(async () => expect((await get(res.headers.get('location')!)).body.status).toBe('Paused'));
    llm.script(reply.text('wiped it'));
    const resumed = await post(`/tealagents/v1alpha1/resume/${res.body.request_id}`, { action: 'approve' }, ASYNC);
    expect(resumed.status).toBe(202);
    expect(resumed.body).toMatchObject({ task_id: res.body.task_id, request_id: res.body.request_id, status: 'Running' });
    await waitFor(async () =>
      expect((await get(resumed.headers.get('location')!)).body).toMatchObject({ status: 'Completed', requests: [{ output: 'wiped it' }] }),
    );

    llm.script(reply.toolCalls([{ id: 'w2', name: 'Notes-wipe', arguments: '{"id":"b"}' }]));
    const second = await post('', { ...item('wipe b'), task_id: res.body.task_id });
    expect(second.body.status).toBe('Paused');
    const rejected = await post(`/tealagents/v1alpha1/resume/${second.body.request_id}`, { action: 'reject' }, ASYNC);
    expect(rejected.status).toBe(200);
    expect(rejected.headers.get('preference-applied')).toBeNull();
    expect(rejected.body.status).toBe('Canceled');
  });

  it("keeps the caller's concurrency slot until the background run ends, not just until its 202", async () => {
    let release!: () => void;
    llm.script(reply.text('slow', { until: new Promise<void>((r) => (release = r)) }));
    const first = llm.requests.length;
    const res = await post('', item('one at a time'), ASYNC);
    expect(res.status).toBe(202);
    await llm.waitForRequest(first);
    // caller_concurrency: 1, and the first run still holds it.
    const refused = await post('', item('meanwhile'));
    expect([refused.status, refused.body.code]).toEqual([429, 'RATE_LIMITED']);
    release();
    await waitFor(async () => expect((await get(res.headers.get('location')!)).body.status).toBe('Completed'));
    llm.script(reply.text('now'));
    await waitFor(async () => expect((await post('', item('after'))).status).toBe(200));
  });

  it('is cancelled as any run; without the preference (or with another) the call waits for its answer', async () => {
    llm.script(reply.hang());
    const next = llm.requests.length;
    const res = await post('', item('never ends'), { prefer: 'return=minimal, respond-async; wait=5' });
    expect(res.status).toBe(202);
    const call = await llm.waitForRequest(next);
    expect((await post(`/tasks/${res.body.task_id}/cancel`, {})).status).toBe(200);
    await call.disconnected;
    await waitFor(async () => expect((await get(res.headers.get('location')!)).body.status).toBe('Canceled'));

    llm.script(reply.text('in line'));
    const plain = await post('', item('hello'), { prefer: 'return=minimal' });
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ status: 'Completed', content: { output: 'in line' } });
  });
});
