/**
 * `Idempotency-Key` (issue 24, item 1; docs/api.md, "Retries with Idempotency-Key") on one server
 * over the in-memory store: a repeated POST runs nothing again and answers what the first copy
 * answered, on every route that changes state (turn, `/sse`, resume, cancel, edit, fork, delete,
 * AG-UI); another body under the key is 422; a malformed key is 400. Real HTTP, a tool with a side
 * effect counted in a file, only the model vendor fake. (Two replicas on each shared store:
 * idempotency-storm.e2e-spec.ts.)
 */
import { randomUUID } from 'node:crypto';
import { agUiAgent, ofType, runOnce } from '../support/ag-ui-client';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { writeOrdersPlugin } from '../support/orders-plugin';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';

// L3 runs every tool at once; Gated (L0) pauses every call for approval.
const AGENT = v3Agent('Shop', { description: 'Places orders', plugins: ['Orders'], governance: { autonomy_level: 'L3' } });
const GATED = v3Agent('Gated', { description: 'Places orders', plugins: ['Orders'], governance: { autonomy_level: 'L0' } });
const item = (content: string) => ({ items: [{ content_type: 'text', content }] });

describe('Idempotency-Key', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let placed: (id: string) => number;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => request(`${t.url}${path}`, { method: 'POST', body, headers });
  const key = () => ({ 'idempotency-key': `k-${randomUUID()}` });

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({ 'shop.yaml': AGENT, 'gated.yaml': GATED });
    ({ placed } = writeOrdersPlugin(dir));
    t = await startTestApp({ configPath: dir, env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' } });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  it('a turn sent 20 times at once runs the model and its tool once, and every copy gets the same answer', async () => {
    llm.script(reply.toolCalls([{ id: 'c1', name: 'Orders-place', arguments: '{"id":"storm"}' }]), reply.text('ordered'));
    const before = llm.requests.length;
    const headers = key();
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('/Shop/1', item('order one'), headers)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const first = answers[0]!.body;
    expect(first).toMatchObject({ status: 'Completed', content: { output: 'ordered' } });
    for (const a of answers) expect(a.body).toEqual(first);
    expect(llm.requests.length - before).toBe(2);
    expect(placed('storm')).toBe(1);

    // Later still the same answer, and no new run.
    const later = await post('/Shop/1', item('order one'), headers);
    expect(later.body).toEqual(first);
    expect(llm.requests.length - before).toBe(2);
    // One task, one request.
    const task = await request(`${t.url}/Shop/1/tasks/${first.task_id}`);
    expect(task.body.requests).toHaveLength(1);
  });

  it('a repeat while the first copy still runs waits for its answer; a follow-on on a task is guarded alike', async () => {
    let release!: () => void;
    llm.script(reply.text('slow answer', { until: new Promise<void>((r) => (release = r)) }));
    const before = llm.requests.length;
    const headers = key();
    const first = post('/Shop/1', item('take your time'), headers);
    await llm.waitForRequest(before);
    const second = post('/Shop/1', item('take your time'), headers);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.body).toMatchObject({ status: 'Completed', content: { output: 'slow answer' } });
    expect(b.body).toEqual(a.body);

    llm.script(reply.text('follow-on answer'));
    const follow = { ...item('and then?'), task_id: a.body.task_id };
    const followKey = key();
    const again = await Promise.all([post('/Shop/1', follow, followKey), post('/Shop/1', follow, followKey), post('/Shop/1', follow, followKey)]);
    for (const r of again) expect(r.body).toEqual(again[0]!.body);
    expect(again[0]!.body).toMatchObject({ status: 'Completed', task_id: a.body.task_id, content: { output: 'follow-on answer' } });
    expect((await request(`${t.url}/Shop/1/tasks/${a.body.task_id}`)).body.requests).toHaveLength(2);
  });

  it('the same key with another body or route is 422 IDEMPOTENCY_KEY_REUSED; a malformed key is 400; keys are per caller', async () => {
    llm.script(reply.text('once'));
    const headers = key();
    const ok = await post('/Shop/1', item('first body'), headers);
    expect(ok.status).toBe(200);
    const other = await post('/Shop/1', item('another body'), headers);
    expect([other.status, other.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(other.headers.get('content-type')).toContain('application/problem+json');
    const otherRoute = await post('/Shop/1/sse', item('first body'), headers);
    expect([otherRoute.status, otherRoute.body.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);

    const long = await post('/Shop/1', item('x'), { 'idempotency-key': 'k'.repeat(256) });
    expect([long.status, long.body.code]).toEqual([400, 'INVALID_IDEMPOTENCY_KEY']);
    expect(long.body.errors).toEqual([expect.objectContaining({ field: 'Idempotency-Key' })]);
    const empty = await post('/Shop/1', item('x'), { 'idempotency-key': '' });
    expect([empty.status, empty.body.code]).toEqual([400, 'INVALID_IDEMPOTENCY_KEY']);
    llm.script(reply.text('at the limit'));
    expect((await post('/Shop/1', item('x'), { 'idempotency-key': 'k'.repeat(255) })).status).toBe(200);

    // Another user's identical request under the same key is theirs: it runs.
    llm.script(reply.text('for someone else'));
    const theirs = await post('/Shop/1', item('first body'), { ...headers, 'x-dev-user': 'someone-else' });
    expect(theirs.body).toMatchObject({ status: 'Completed', content: { output: 'for someone else' } });
  });

  it('/sse: a repeat replays the stream of the first copy, with the same events', async () => {
    llm.script(reply.chunks(['str', 'eamed']));
    const headers = key();
    const first = await post('/Shop/1/sse', item('stream it'), headers);
    expect(first.text).toContain('event: final-response');
    const before = llm.requests.length;
    const second = await post('/Shop/1/sse', item('stream it'), headers);
    expect(llm.requests.length).toBe(before);
    const finals = (text: string) => text.split('\n\n').filter((f) => f.includes('event: final-response'));
    expect(finals(second.text)).toEqual(finals(first.text));
    expect(second.text).toContain('streamed');
  });

  it('a resume sent twice decides once and answers alike; so does a background turn', async () => {
    llm.script(reply.toolCalls([{ id: 'g1', name: 'Orders-place', arguments: '{"id":"gated"}' }]));
    const paused = await post('/Gated/1', item('order gated'));
    expect(paused.body.status).toBe('Paused');
    llm.script(reply.text('gated order placed'));
    const headers = key();
    const path = `/Gated/1/tealagents/v1alpha1/resume/${paused.body.request_id}`;
    const [a, b] = await Promise.all([post(path, { action: 'approve' }, headers), post(path, { action: 'approve' }, headers)]);
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    expect(placed('gated')).toBe(1);
    // Without the key, the same resume is refused: the pause is decided.
    expect((await post(path, { action: 'approve' })).status).toBe(409);

    let release!: () => void;
    llm.script(reply.text('background', { until: new Promise<void>((r) => (release = r)) }));
    const bg = key();
    const async = { ...bg, prefer: 'respond-async' };
    const one = await post('/Shop/1', item('later'), async);
    const two = await post('/Shop/1', item('later'), async);
    expect([one.status, two.status]).toEqual([202, 202]);
    expect(two.body).toEqual(one.body);
    release();
    await waitFor(async () => expect((await request(`${t.url}/Shop/1/tasks/${one.body.task_id}`)).body.status).toBe('Completed'));
  });

  it('cancel, edit, fork and delete: a repeat answers as the first copy did and does nothing again', async () => {
    llm.script(reply.hang());
    const before = llm.requests.length;
    const running = await post('/Shop/1', item('never ends'), { prefer: 'respond-async' });
    const call = await llm.waitForRequest(before);
    const cancelKey = key();
    const c1 = await post(`/Shop/1/tasks/${running.body.task_id}/cancel`, {}, cancelKey);
    expect(c1.status).toBe(200);
    await call.disconnected;
    const c2 = await post(`/Shop/1/tasks/${running.body.task_id}/cancel`, {}, cancelKey);
    expect([c2.status, c2.body]).toEqual([200, c1.body]);
    // Without the key, a second cancel finds nothing running.
    expect((await post(`/Shop/1/tasks/${running.body.task_id}/cancel`, {})).status).toBe(409);

    llm.script(reply.text('v1'));
    const done = await post('/Shop/1', item('draft'));
    llm.script(reply.text('v2'));
    const editKey = key();
    const editPath = `/Shop/1/tasks/${done.body.task_id}/requests/${done.body.request_id}/edit`;
    const e1 = await post(editPath, item('draft, edited'), editKey);
    const e2 = await post(editPath, item('draft, edited'), editKey);
    expect(e1.body).toMatchObject({ status: 'Completed', content: { output: 'v2' } });
    expect(e2.body).toEqual(e1.body);

    const forkKey = key();
    const f1 = await post(`/Shop/1/tasks/${done.body.task_id}/fork`, {}, forkKey);
    const f2 = await post(`/Shop/1/tasks/${done.body.task_id}/fork`, {}, forkKey);
    expect([f1.status, f2.status]).toEqual([201, 201]);
    expect(f2.body.task_id).toBe(f1.body.task_id);

    const deleteKey = key();
    const d1 = await request(`${t.url}/Shop/1/tasks/${f1.body.task_id}`, { method: 'DELETE', headers: deleteKey });
    const d2 = await request(`${t.url}/Shop/1/tasks/${f1.body.task_id}`, { method: 'DELETE', headers: deleteKey });
    expect([d1.status, d2.status]).toEqual([204, 204]);
    // Without the key, a task already gone is 404.
    expect((await request(`${t.url}/Shop/1/tasks/${f1.body.task_id}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('an AG-UI run sent twice with the same key (official client) runs once; the repeat replays its events', async () => {
    llm.script(reply.text('from ag-ui'));
    const threadId = randomUUID();
    const runId = randomUUID();
    const headers = key();
    const agent = () => agUiAgent(`${t.url}/Shop/1/ag-ui`, { threadId, headers, messages: [{ id: 'm-1', role: 'user', content: 'hello over ag-ui' }] });
    const before = llm.requests.length;
    const first = await runOnce(agent(), { runId });
    const second = await runOnce(agent(), { runId });
    expect([first.error, second.error]).toEqual([undefined, undefined]);
    expect(llm.requests.length - before).toBe(1);
    expect(first.types).toEqual(expect.arrayContaining(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED']));
    expect(second.types).toEqual(first.types);
    const text = (run: typeof first) =>
      ofType<{ delta: string }>(run, 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join('');
    expect(text(second)).toBe('from ag-ui');
    // The same outcome (the events' own timestamps are when each stream sent them).
    const finished = (run: typeof first) => ofType<Record<string, unknown>>(run, 'RUN_FINISHED').map(({ timestamp: _at, ...rest }) => rest);
    expect(finished(second)).toEqual(finished(first));
  });
});
