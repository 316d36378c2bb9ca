/**
 * The AG-UI route (`POST /{name}/{version}/ag-ui`) driven by the official `@ag-ui/client`
 * HttpAgent against the real app; only the model vendor is fake. Invariants: a thread is a task the
 * caller owns and a run is one of its requests (threadId = task_id, runId = request_id); the server
 * keeps the history, so a client that sends it whole is not duplicated in the model's input.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { agUiAgent, ofType, runOnce } from '../support/ag-ui-client';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { postJson } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { modelInput, v3Client } from '../support/v3-client';

const PLAIN = v3Agent('Plain', { description: 'AG-UI e2e' });

/** A POST with exactly the given Accept header, or none at all (fetch would add `accept: *\/*`). */
function postWithAccept(url: string, body: unknown, accept: string | undefined): Promise<{ status: number; contentType?: string; body: Buffer }> {
  const json = JSON.stringify(body);
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) };
  if (accept !== undefined) headers.accept = accept;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(json);
  });
}

describe('AG-UI: plain runs', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  const url = () => `${t.url}/Plain/1/ag-ui`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    t = await startTestApp({
      agents: { 'plain.yaml': PLAIN },
      env: fakeModelEnv(llm, { TA_SSE_KEEPALIVE_MS: '20' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  it('streams a run: RUN_STARTED, the text, a state snapshot, RUN_FINISHED; thread = task, run = request', async () => {
    llm.script(reply.chunks(['Hel', 'lo!']));
    const agent = agUiAgent(url());
    const runId = randomUUID();
    const run = await runOnce(agent, { say: 'hi', runId });
    expect(run.error).toBeUndefined();
    expect(run.types).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'STATE_SNAPSHOT', 'RUN_FINISHED']);
    expect(ofType(run, 'TEXT_MESSAGE_CONTENT').map((e) => e.delta)).toEqual(['Hel', 'lo!']);
    const [started] = ofType(run, 'RUN_STARTED');
    const [finished] = ofType(run, 'RUN_FINISHED');
    expect(started).toMatchObject({ threadId: agent.threadId, runId, metadata: { task_id: agent.threadId, request_id: runId } });
    expect(finished).toMatchObject({ threadId: agent.threadId, runId, outcome: { type: 'success' }, result: 'Hello!' });
    expect(ofType(run, 'STATE_SNAPSHOT')[0]).toMatchObject({
      snapshot: { task_id: agent.threadId, request_id: runId, status: 'Completed', pending_approvals: [] },
    });
    expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Hello!' });

    const task = await v3Client(`${t.url}/Plain/1`).task(agent.threadId);
    expect(task.status).toBe(200);
    expect(task.body).toMatchObject({ task_id: agent.threadId, status: 'Completed', requests: [{ request_id: runId, output: 'Hello!' }] });
  });

  it('a second run on the thread sends the whole history; the model gets each turn once', async () => {
    llm.script(reply.text('Hi Ada.'), reply.text('You are Ada.'));
    const agent = agUiAgent(url());
    await runOnce(agent, { say: 'my name is Ada' });
    const second = await runOnce(agent, { say: 'who am I?' });
    expect(second.error).toBeUndefined();
    expect(ofType(second, 'RUN_FINISHED')[0]).toMatchObject({ result: 'You are Ada.' });
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'my name is Ada'],
      ['assistant', 'Hi Ada.'],
      ['user', 'who am I?'],
    ]);
    expect(agent.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'my name is Ada'],
      ['assistant', 'Hi Ada.'],
      ['user', 'who am I?'],
      ['assistant', 'You are Ada.'],
    ]);
  });

  it('sends MESSAGES_SNAPSHOT (the server-kept history) before RUN_FINISHED when asked', async () => {
    llm.script(reply.text('one'), reply.text('two'));
    const agent = agUiAgent(url());
    await runOnce(agent, { say: 'first' });
    const run = await runOnce(agent, { say: 'second', forwardedProps: { messagesSnapshot: true } });
    expect(run.types.slice(-3)).toEqual(['STATE_SNAPSHOT', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    const [snapshot] = ofType<{ messages: { role: string; content: unknown }[] }>(run, 'MESSAGES_SNAPSHOT');
    expect(snapshot.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'first'],
      ['assistant', 'one'],
      ['user', 'second'],
      ['assistant', 'two'],
    ]);
  });

  it("another user's thread is a RUN_ERROR with NOT_OWNER (the 401 of the v3 routes); nothing runs", async () => {
    llm.script(reply.text('mine'));
    const alice = agUiAgent(url(), { headers: { 'x-dev-user': 'alice' } });
    await runOnce(alice, { say: 'secret' });
    const mallory = agUiAgent(url(), { threadId: alice.threadId, headers: { 'x-dev-user': 'mallory' } });
    const run = await runOnce(mallory, { say: 'let me in' });
    expect(run.types).toEqual(['RUN_ERROR']);
    expect(run.events[0]).toMatchObject({ code: 'NOT_OWNER', message: expect.any(String) });
    const task = await v3Client(`${t.url}/Plain/1`, { 'x-dev-user': 'alice' }).task(alice.threadId);
    expect(task.body.requests).toHaveLength(1);
  });

  it('a reused runId is a RUN_ERROR (VERSION_CONFLICT), not a second run', async () => {
    llm.script(reply.text('once'));
    const agent = agUiAgent(url());
    const runId = randomUUID();
    await runOnce(agent, { say: 'a', runId });
    const again = await runOnce(agent, { say: 'b', runId });
    expect(again.events).toMatchObject([{ type: 'RUN_ERROR', code: 'VERSION_CONFLICT' }]);
  });

  it('a model failure during the run: RUN_STARTED, then RUN_ERROR with our error code', async () => {
    llm.script(reply.error(400, { body: { error: { message: 'bad request', type: 'invalid_request_error' } } }));
    const agent = agUiAgent(url());
    const run = await runOnce(agent, { say: 'x' });
    expect(run.types).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(run.events[1]).toMatchObject({ code: 'LLM_REQUEST_REJECTED', metadata: { task_id: agent.threadId } });
    const task = await v3Client(`${t.url}/Plain/1`).task(agent.threadId);
    expect(task.body.requests).toMatchObject([{ status: 'Failed', error: { code: 'LLM_REQUEST_REJECTED' } }]);
  });

  it('a cancel of the running request (POST /tasks/{id}/cancel) finishes the run cancelled', async () => {
    llm.script(reply.hang());
    const agent = agUiAgent(url());
    const running = runOnce(agent, { say: 'take your time' });
    const asked = llm.requests.length;
    while (llm.requests.length === asked) await new Promise((r) => setTimeout(r, 10));
    const cancel = await postJson(`${t.url}/Plain/1/tasks/${agent.threadId}/cancel`, {});
    expect(cancel.status).toBe(200);
    const run = await running;
    expect(run.error).toBeUndefined();
    expect(run.types.slice(-2)).toEqual(['STATE_SNAPSHOT', 'RUN_FINISHED']);
    expect(ofType(run, 'RUN_FINISHED')[0]).toMatchObject({ outcome: { type: 'cancelled' } });
  });

  it('keepalive comments fill the silences of the SSE encoding; the client reads past them', async () => {
    llm.script(reply.text('late', { delayMs: 150 }));
    const body = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: 'm1', role: 'user', content: 'x' }], tools: [], context: [] };
    const raw = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(raw.headers.get('content-type')).toBe('text/event-stream');
    expect(await raw.text()).toMatch(/"RUN_STARTED"[\s\S]*: keepalive\n\n[\s\S]*"RUN_FINISHED"/);

    llm.script(reply.text('late again', { delayMs: 150 }));
    const run = await runOnce(agUiAgent(url()), { say: 'x' });
    expect(run.error).toBeUndefined();
    expect(ofType(run, 'RUN_FINISHED')[0]).toMatchObject({ result: 'late again' });
  });

  it('answers SSE unless Accept prefers AG-UI protobuf over text/event-stream by q-value (no Accept and */*, what curl and fetch send, are SSE)', async () => {
    const cases: [string | undefined, string][] = [
      [undefined, 'text/event-stream'],
      ['*/*', 'text/event-stream'],
      ['application/vnd.ag-ui.event+proto;q=0.9, text/event-stream', 'text/event-stream'],
      ['text/event-stream;q=0.5, */*;q=0.1, application/vnd.ag-ui.event+proto', 'application/vnd.ag-ui.event+proto'],
    ];
    for (const [accept, contentType] of cases) {
      llm.script(reply.text('hi'));
      const body = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: 'm1', role: 'user', content: 'x' }], tools: [], context: [] };
      const res = await postWithAccept(url(), body, accept);
      expect([accept, res.status, res.contentType]).toEqual([accept, 200, contentType]);
      if (contentType === 'text/event-stream') expect(res.body.toString()).toMatch(/^data: \{[^\n]*"RUN_STARTED"[\s\S]*"RUN_FINISHED"/);
    }
  });

  it('answers AG-UI protobuf to an Accept that asks for it; an input that is no RunAgentInput is 422 problem+json', async () => {
    llm.script(reply.text('proto'));
    const body = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: 'm1', role: 'user', content: 'x' }], tools: [], context: [], state: {} };
    const proto = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/vnd.ag-ui.event+proto' },
      body: JSON.stringify(body),
    });
    expect(proto.status).toBe(200);
    expect(proto.headers.get('content-type')).toBe('application/vnd.ag-ui.event+proto');
    expect((await proto.arrayBuffer()).byteLength).toBeGreaterThan(0);

    const bad = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ threadId: 'a b', messages: 'x' }),
    });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(((await bad.json()) as { errors: { field: string }[] }).errors.map((e: { field: string }) => e.field)).toEqual(['threadId', 'runId', 'messages']);
  });
});

describe('AG-UI: Entra ID auth and tenants', () => {
  const T1 = 'c0ffee00-0000-4000-8000-00000000000a';
  const T2 = 'c0ffee00-0000-4000-8000-00000000000b';
  const ALICE = { tid: T1, oid: '11111111-1111-4111-8111-111111111111' };
  const BOB = { tid: T1, oid: '22222222-2222-4222-8222-222222222222' };
  const EVE = { tid: T2, oid: '11111111-1111-4111-8111-111111111111' };
  let issuer: OidcIssuer;
  let llm: FakeOpenAi;
  let t: TestApp;
  const url = () => `${t.url}/Plain/1/ag-ui`;
  const bearer = async (who: { tid: string; oid: string }) => ({ authorization: `Bearer ${await issuer.mint(who)}` });

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    llm = await startFakeOpenAi();
    t = await startTestApp({
      agents: { 'plain.yaml': PLAIN },
      env: fakeModelEnv(llm, entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: `${T1},${T2}` })),
    });
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  it('without a token: 401 problem+json before any stream (HttpAgent throws HTTP 401)', async () => {
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined); // the client logs the failure
    const run = await runOnce(agUiAgent(url()), { say: 'hi' }).finally(() => quiet.mockRestore());
    expect(run.events).toEqual([]);
    expect(run.error?.status).toBe(401);
    expect(run.error?.message).toMatch(/^HTTP 401: .*UNAUTHENTICATED/);
  });

  it("the caller owns the thread: another user of the tenant gets RUN_ERROR NOT_OWNER; another tenant's same threadId is its own task", async () => {
    llm.script(reply.text('for alice'), reply.text('for eve'));
    const alice = agUiAgent(url(), { headers: await bearer(ALICE) });
    expect(ofType(await runOnce(alice, { say: 'hi' }), 'RUN_FINISHED')[0]).toMatchObject({ result: 'for alice' });
    const bob = await runOnce(agUiAgent(url(), { threadId: alice.threadId, headers: await bearer(BOB) }), { say: 'hi' });
    expect(bob.events).toMatchObject([{ type: 'RUN_ERROR', code: 'NOT_OWNER' }]);
    const eve = agUiAgent(url(), { threadId: alice.threadId, headers: await bearer(EVE) });
    const eveRun = await runOnce(eve, { say: 'hi' });
    expect(ofType(eveRun, 'RUN_FINISHED')[0]).toMatchObject({ result: 'for eve' });
    // Eve's model input holds nothing of Alice's thread
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'hi'],
    ]);
  });
});
