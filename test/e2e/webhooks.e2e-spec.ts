/**
 * Webhooks (issue 24, items 3–5; docs/webhooks.md) on one server over the in-memory store: the
 * events of background runs arrive at a real HTTP receiver, signed per Standard Webhooks and
 * verified with the `standardwebhooks` package's own verifier; every event kind, with the ids and
 * what it is about; a receiver that is down for a while gets every event once it is up, repeats
 * only with the same `webhook-id`; per-request URLs under the agent's prefixes only; addresses the
 * SSRF guard refuses are never reached; the admin lists dead deliveries and redelivers them. Only
 * the model vendor is fake. (Several replicas, kill -9: webhooks-replicas.e2e-spec.ts.)
 */
import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ADMIN = { 'x-dev-roles': 'Agents.Admin' };

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** A receiver on 127.0.0.1 that records what it is sent; `answer` decides each status (default 204). */
async function startReceiver() {
  const received: Received[] = [];
  let answer: (r: Received) => { status: number; headers?: Record<string, string> } = () => ({ status: 204 });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: Received = { path: req.url ?? '', headers: req.headers, body, json: body ? JSON.parse(body) : {} };
      received.push(r);
      const { status, headers } = answer(r);
      res.writeHead(status, headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    answer: (fn: typeof answer) => (answer = fn),
    of: (type: string, requestId?: string) => received.filter((r) => r.json.type === type && (!requestId || r.json.data.request_id === requestId)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const agent = (hook: string, extra = '') => `
apiVersion: tealagents/v1alpha1
name: Hooked
version: 1
description: Reports its requests
spec:
  governance:
    autonomy_level: L1
    approval_ttl_seconds: 1
    tools:
      Notes-wipe: { risk: write_high_risk }
  webhooks:
    - url: ${hook}/all
      secret_env: HOOK_SECRET
    - secret_env: HOOK_SECRET
      events: [request.completed]
      allow_request_urls: [${hook}/mine/, http://169.254.169.254/latest/]
${extra}
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Notes]
`;
const PLUGIN = `
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [{ name: 'wipe', description: 'Deletes a note', parameters: id, handler: ({ id }) => 'wiped ' + id }] }];
`;
const item = (content: string, extra: Record<string, unknown> = {}) => ({ items: [{ content_type: 'text', content }], ...extra });

describe('webhooks', () => {
  let llm: FakeOpenAi;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let t: TestApp;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => request(`${t.url}${path}`, { method: 'POST', body, headers });
  const verify = (r: Received) => new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>);

  beforeAll(async () => {
    process.env.HOOK_SECRET = SECRET;
    llm = await startFakeOpenAi();
    receiver = await startReceiver();
    const dir = writeAgentDir({ 'hooked.yaml': agent(receiver.url), 'custom_plugins.js': PLUGIN });
    t = await startTestApp({
      configPath: dir,
      env: {
        TA_BASE_URL: llm.baseURL,
        TA_API_KEY: 'sk-test',
        TA_LLM_MAX_RETRIES: '0',
        TA_WEBHOOK_ALLOW_PRIVATE: 'true',
        TA_WEBHOOK_TIMEOUT_MS: '2000',
        TA_LEASE_SWEEP_MS: '200',
      },
    });
  });
  afterEach(() => receiver.answer(() => ({ status: 204 })));
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await llm?.close();
    delete process.env.HOOK_SECRET;
  });

  it('a background run completes and its request.completed arrives, signed (verified by standardwebhooks), with the ids and the output', async () => {
    llm.script(reply.text('all done'));
    const res = await post('/Hooked/1', item('do it'), { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    await waitFor(async () => expect(receiver.of('request.completed', res.body.request_id)).toHaveLength(1));
    const [hook] = receiver.of('request.completed', res.body.request_id);
    expect(hook!.headers['webhook-id']).toMatch(/^msg_/);
    expect(hook!.headers['content-type']).toContain('application/json');
    expect(verify(hook!)).toEqual(hook!.json);
    expect(hook!.json).toEqual({
      type: 'request.completed',
      timestamp: expect.any(String),
      data: {
        tenant_id: expect.any(String),
        task_id: res.body.task_id,
        session_id: res.body.session_id,
        request_id: res.body.request_id,
        agent: 'Hooked:1',
        status: 'Completed',
        output: 'all done',
        token_usage: expect.any(Object),
      },
    });
    // A tampered body does not verify.
    expect(() => verify({ ...hook!, body: hook!.body.replace('all done', 'all gone') })).toThrow();
  });

  it('a pause sends approval.required with the pending calls, their risk and where to decide; deciding there completes it', async () => {
    llm.script(reply.toolCalls([{ id: 'w1', name: 'Notes-wipe', arguments: '{"id":"a"}' }]));
    const res = await post('/Hooked/1', item('wipe a'), { prefer: 'respond-async' });
    await waitFor(async () => expect(receiver.of('approval.required', res.body.request_id)).toHaveLength(1));
    const [hook] = receiver.of('approval.required', res.body.request_id);
    verify(hook!);
    const data = hook!.json.data;
    expect(data).toMatchObject({
      task_id: res.body.task_id,
      request_id: res.body.request_id,
      status: 'Paused',
      pause_id: expect.any(String),
      max_risk: 'write_high_risk',
    });
    expect(data.tool_calls).toEqual([expect.objectContaining({ id: 'w1', name: 'Notes-wipe', risk: 'write_high_risk' })]);
    expect(data.approval_url).toBe(`/Hooked/1/tealagents/v1alpha1/resume/${res.body.request_id}?action=approve&pause_id=${data.pause_id}`);
    llm.script(reply.text('wiped'));
    const decided = await post(String(data.approval_url), undefined);
    expect(decided.status).toBe(200);
    await waitFor(async () => expect(receiver.of('request.completed', res.body.request_id)).toHaveLength(1));
  });

  it('request.failed, request.canceled, and approval.expired with request.canceled when a pause outlives its TTL', async () => {
    llm.script(reply.error(400, { body: { error: { message: 'bad request', type: 'invalid_request_error' } } }));
    const failed = await post('/Hooked/1', item('fail'), { prefer: 'respond-async' });
    await waitFor(async () => expect(receiver.of('request.failed', failed.body.request_id)).toHaveLength(1));
    expect(receiver.of('request.failed', failed.body.request_id)[0]!.json.data).toMatchObject({ status: 'Failed', error: { code: expect.any(String) } });

    llm.script(reply.hang());
    const before = llm.requests.length;
    const hanging = await post('/Hooked/1', item('hang'), { prefer: 'respond-async' });
    await llm.waitForRequest(before);
    expect((await post(`/Hooked/1/tasks/${hanging.body.task_id}/cancel`, {})).status).toBe(200);
    await waitFor(async () => expect(receiver.of('request.canceled', hanging.body.request_id)).toHaveLength(1));
    expect(receiver.of('request.canceled', hanging.body.request_id)[0]!.json.data).toMatchObject({ status: 'Canceled', reason: 'canceled' });

    llm.script(reply.toolCalls([{ id: 'w2', name: 'Notes-wipe', arguments: '{"id":"b"}' }]));
    const paused = await post('/Hooked/1', item('wipe b'));
    expect(paused.body.status).toBe('Paused');
    // approval_ttl_seconds: 1, and the sweep looks every 200 ms: nobody reads the task meanwhile.
    await waitFor(async () => expect(receiver.of('approval.expired', paused.body.request_id)).toHaveLength(1));
    await waitFor(async () => expect(receiver.of('request.canceled', paused.body.request_id)).toHaveLength(1));
    expect(receiver.of('approval.expired', paused.body.request_id)[0]!.json.data).toMatchObject({ pause_id: paused.body.content.pause_id, status: 'Canceled' });
  }, 20_000);

  it('a receiver that is down for a while gets every event once it is up; a repeat carries the same webhook-id', async () => {
    let down = true;
    receiver.answer(() => (down ? { status: 503, headers: { 'retry-after': '1' } } : { status: 204 }));
    llm.script(reply.text('one'), reply.text('two'));
    const one = await post('/Hooked/1', item('first'), { prefer: 'respond-async' });
    const two = await post('/Hooked/1', item('second'), { prefer: 'respond-async' });
    await waitFor(async () => {
      expect(receiver.of('request.completed', one.body.request_id).length).toBeGreaterThan(0);
      expect(receiver.of('request.completed', two.body.request_id).length).toBeGreaterThan(0);
    });
    const admin = await request(`${t.url}/admin/webhooks/deliveries?status=pending`, { headers: ADMIN });
    expect(admin.status).toBe(200);
    expect(admin.body.deliveries).toEqual(
      expect.arrayContaining([expect.objectContaining({ request_id: one.body.request_id, event: 'request.completed', status: 'pending', last_status: 503 })]),
    );
    down = false;
    await waitFor(async () => {
      for (const id of [one.body.request_id, two.body.request_id]) {
        const got = receiver.of('request.completed', id);
        expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
        expect(got.length).toBeGreaterThan(1);
      }
      const pending = await request(`${t.url}/admin/webhooks/deliveries?status=pending`, { headers: ADMIN });
      expect(pending.body.deliveries.filter((d: { request_id: string }) => [one.body.request_id, two.body.request_id].includes(d.request_id))).toEqual([]);
    }, 20_000);
  }, 30_000);

  it("a request's webhook_url is taken only under the agent's prefixes; an address the SSRF guard refuses is never reached, listed failed, and redelivered on demand", async () => {
    llm.script(reply.text('to mine'));
    const mine = await post('/Hooked/1', item('mine', { webhook_url: `${receiver.url}/mine/inbox` }), { prefer: 'respond-async' });
    expect(mine.status).toBe(202);
    await waitFor(async () => expect(receiver.of('request.completed', mine.body.request_id)).toHaveLength(2)); // /all and /mine/inbox
    const own = receiver
      .of('request.completed', mine.body.request_id)
      .filter((r) => r.headers['webhook-id'] !== receiver.of('request.completed', mine.body.request_id)[0]!.headers['webhook-id']);
    expect(own).toHaveLength(1);

    for (const url of [`${receiver.url}/elsewhere`, `${receiver.url}/mine`, 'http://127.0.0.1:1/mine/', 'ftp://x/mine/']) {
      const refused = await post('/Hooked/1', item('nope', { webhook_url: url }));
      expect([refused.status, refused.body.code, refused.body.errors?.[0]?.field]).toEqual([422, 'VALIDATION_FAILED', 'webhook_url']);
    }

    // Allowed by the prefix, refused by the SSRF guard (link-local, even with TA_WEBHOOK_ALLOW_PRIVATE): dead at once, nothing sent.
    llm.script(reply.text('to the metadata service'));
    const meta = await post('/Hooked/1', item('meta', { webhook_url: 'http://169.254.169.254/latest/hook' }), { prefer: 'respond-async' });
    let failed: { id: string; last_error: string; url: string }[] = [];
    await waitFor(async () => {
      const list = await request(`${t.url}/admin/webhooks/deliveries?status=failed`, { headers: ADMIN });
      failed = list.body.deliveries.filter((d: { request_id: string }) => d.request_id === meta.body.request_id);
      expect(failed).toHaveLength(1);
    });
    expect(failed[0]).toMatchObject({ url: 'http://169.254.169.254/latest/hook', status: 'failed', attempts: 1 });
    expect(failed[0]!.last_error).toMatch(/169\.254\.169\.254/);

    // Only an admin lists or redelivers.
    expect((await request(`${t.url}/admin/webhooks/deliveries?status=failed`)).status).toBe(403);
    expect((await request(`${t.url}/admin/webhooks/deliveries?status=lost`, { headers: ADMIN })).status).toBe(422);
    const again = await request(`${t.url}/admin/webhooks/deliveries/${failed[0]!.id}/redeliver`, { method: 'POST', headers: ADMIN });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: failed[0]!.id, attempts: 0 });
    await waitFor(async () => {
      const list = await request(`${t.url}/admin/webhooks/deliveries?status=failed`, { headers: ADMIN });
      expect(list.body.deliveries.find((d: { id: string }) => d.id === failed[0]!.id)).toMatchObject({ attempts: 1 });
    });
    expect((await request(`${t.url}/admin/webhooks/deliveries/msg_nope/redeliver`, { method: 'POST', headers: ADMIN })).status).toBe(404);
  }, 20_000);

  it('a redirect is never followed: the attempt fails and the address it points to gets nothing', async () => {
    receiver.answer((r) => (r.path.startsWith('/mine/') ? { status: 302, headers: { location: `${receiver.url}/stolen` } } : { status: 204 }));
    llm.script(reply.text('redirected'));
    const res = await post('/Hooked/1', item('redirect me', { webhook_url: `${receiver.url}/mine/redirecting` }), { prefer: 'respond-async' });
    await waitFor(async () => {
      const list = await request(`${t.url}/admin/webhooks/deliveries?status=pending`, { headers: ADMIN });
      expect(
        list.body.deliveries.find((d: { request_id: string; url: string }) => d.request_id === res.body.request_id && d.url.includes('/mine/')),
      ).toMatchObject({
        last_status: 302,
        attempts: 1,
      });
    });
    expect(receiver.received.filter((r) => r.path === '/stolen')).toEqual([]);
  });
});

describe('webhooks without TA_WEBHOOK_ALLOW_PRIVATE', () => {
  it('refuses to deliver to a loopback address, even one the agent allows: the delivery is dead, the receiver never reached', async () => {
    process.env.HOOK_SECRET = SECRET;
    const llm = await startFakeOpenAi();
    const receiver = await startReceiver();
    const dir = writeAgentDir({ 'hooked.yaml': agent(receiver.url), 'custom_plugins.js': PLUGIN });
    const t = await startTestApp({
      configPath: dir,
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
    });
    try {
      llm.script(reply.text('nobody hears this'));
      const res = await request(`${t.url}/Hooked/1`, { method: 'POST', body: item('hello') });
      expect(res.body.status).toBe('Completed');
      let dead: { url: string; last_error: string }[] = [];
      await waitFor(async () => {
        const list = await request(`${t.url}/admin/webhooks/deliveries?status=failed`, { headers: ADMIN });
        dead = list.body.deliveries.filter((d: { request_id: string }) => d.request_id === res.body.request_id);
        expect(dead).toHaveLength(1);
      });
      expect(dead[0]!.url).toBe(`${receiver.url}/all`);
      expect(dead[0]!.last_error).toMatch(/127\.0\.0\.1/);
      expect(receiver.received).toEqual([]);
    } finally {
      await t.close();
      await receiver.close();
      await llm.close();
      delete process.env.HOOK_SECRET;
    }
  }, 15_000);
});
