/**
 * Logs that correlate and the audit log (docs/operations.md, Logs and Audit log), over real HTTP
 * with the real logger; only the model vendor (and, in entra mode, the identity provider) is fake.
 * Invariants: every line logged while serving a v3 call names its API request, task, session,
 * agent, caller (tid, hashed oid) and trace, so a task's lines join across calls; approvals,
 * rejections, cancels, edits, deletes and refused callers are audit records, on stdout and, with
 * TA_AUDIT_LOG, in that file alike; no token text is ever logged; a v3 run the model fails
 * answers a problem naming the Failed request.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url } from 'jose';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { claimsOf, entraEnv, OidcIssuer, startOidcIssuer, unsignedToken } from '../support/oidc-issuer';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { NOTES_WIPE_PLUGIN, v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';
import { refusedUpgrade, wsUrl } from '../support/ws-client';

const GUARD = v3Agent('Guard', { description: 'Log correlation e2e', systemPrompt: 'Be careful.', plugins: ['Notes'], governance: { autonomy_level: 'L1' } });
const ECHO = v3Agent('Echo', { description: 'Entra audit e2e', model: 'local/echo' });
/** An agent whose routes need a scope the test tokens do not carry (`spec.auth`). */
const STRICT = `${v3Agent('Strict', { description: 'Entra audit e2e', model: 'local/echo' })}  auth:\n    required_scopes: [agents.special]\n`;

const CHAT = `
apiVersion: skagents/v1
kind: Chat
description: Stateless agent with a /stream socket
service_name: ChatBot
version: 1.0
input_type: BaseInput
spec:
  agent:
    name: default
    role: Default Agent
    model: local/echo
    system_prompt: Be brief.
`;

const AUDIT_SCHEMA_KEYS = ['audit', 'event', 'at'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const HEX32 = /^[0-9a-f]{32}$/;
const DEV_TENANT = '00000000-0000-0000-0000-000000000000';
const oidHash = (oid: string) => createHash('sha256').update(oid).digest('hex').slice(0, 16);
const say = (content: string, extra: Record<string, unknown> = {}) => ({ items: [text(content)], ...extra });
const tc = (id: string) => ({ id, name: 'Notes-wipe', arguments: JSON.stringify({ id }) });

type Line = Record<string, unknown>;

/** The audit file's complete lines: a line still being written (no newline yet) is not read. */
function auditFileLines(path: string): Line[] {
  const text = readFileSync(path, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
}

async function waitFor(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('v3 log correlation and audit (dev mode)', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let auditPath: string;
  let lines: Line[];
  let fileLines: Line[];
  const http: string[] = [];
  const ids: Record<string, { task_id: string; session_id: string; request_id: string }> = {};
  const idsOf = (r: { task_id: string; session_id: string; request_id: string }) => ({
    task_id: r.task_id,
    session_id: r.session_id,
    request_id: r.request_id,
  });
  let failed: { status: number; body: Record<string, unknown> };

  /** Each call has its own X-Request-Id, to find the lines it produced. */
  const call = (name: string, path: string, body?: unknown, method?: string) => {
    const id = `${name}-${randomUUID()}`;
    http.push(id);
    return request(`${t.url}/Guard/1${path}`, { method: method ?? 'POST', body, headers: { 'x-request-id': id } });
  };

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({ 'guard.yaml': GUARD, 'custom_plugins.js': NOTES_WIPE_PLUGIN });
    auditPath = join(mkdtempSync(join(tmpdir(), 'ta-audit-')), 'audit.jsonl');
    t = await startTestApp({
      configPath: dir,
      env: fakeModelEnv(llm, { TA_LOG_LEVEL: 'debug', TA_AUDIT_LOG: auditPath }),
    });

    // Pause, approve: the run goes on and completes.
    llm.script(reply.toolCalls([tc('c1')], { text: 'On it.' }), reply.text('Done.'));
    const paused = await call('invoke', '', say('wipe a'));
    expect(paused.body.status).toBe('Paused');
    ids.first = idsOf(paused.body);
    const approved = await call('approve', `/tealagents/v1alpha1/resume/${paused.body.request_id}`, {
      action: 'approve',
      pause_id: paused.body.pause_id ?? paused.body.content.pause_id,
    });
    expect(approved.status).toBe(200);

    // Edit the first turn and rerun it.
    llm.script(reply.text('Edited.'));
    const edited = await call('edit', `/tasks/${paused.body.task_id}/requests/${paused.body.request_id}/edit`, say('wipe b'));
    expect(edited.body.status).toBe('Completed');
    ids.edited = idsOf(edited.body);

    // Pause again, reject.
    // Every pending call rejected: the request ends Canceled with no further model call.
    llm.script(reply.toolCalls([tc('c2')]));
    const again = await call('follow-on', '', say('wipe c', { task_id: paused.body.task_id }));
    expect(again.body.status).toBe('Paused');
    const rejected = await call('reject', `/tealagents/v1alpha1/resume/${again.body.request_id}`, { action: 'reject', reason: 'not that one' });
    expect(rejected.status).toBe(200);
    ids.rejected = idsOf(again.body);

    // Pause once more, cancel.
    llm.script(reply.toolCalls([tc('c3')]));
    const third = await call('follow-on-2', '', say('wipe d', { task_id: paused.body.task_id }));
    expect(third.body.status).toBe('Paused');
    const canceled = await call('cancel', `/tasks/${paused.body.task_id}/cancel`);
    expect(canceled.status).toBe(200);
    ids.canceled = idsOf(third.body);

    // The model fails (502 from the provider).
    llm.script(reply.error(502));
    const res = await call('fails', '', say('and now?', { task_id: paused.body.task_id }));
    failed = { status: res.status, body: res.body };

    // A second task in its own session; delete the first task, then that session.
    llm.script(reply.text('Hi.'));
    const other = await call('other', '', say('hi', { session_id: 'audit-session' }));
    ids.other = idsOf(other.body);
    expect((await call('delete-task', `/tasks/${paused.body.task_id}`, undefined, 'DELETE')).status).toBe(204);
    expect((await call('delete-session', '/sessions/audit-session', undefined, 'DELETE')).status).toBe(204);

    await waitFor('a request completed line per call', () =>
      http.every((id) => t.logs().some((l) => l.msg === 'request completed' && l.http_request_id === id)),
    );
    lines = t.logs();
    await t.close();
    fileLines = auditFileLines(auditPath);
  });

  afterAll(async () => {
    await llm?.close();
  });

  it('names the API request, task, session, agent, caller and trace on every line of a v3 call', () => {
    const caller = { agent: 'Guard:1', tid: DEV_TENANT, oid_hash: oidHash('dev-user'), trace_id: expect.stringMatching(HEX32) };
    const request = { request_id: expect.any(String), task_id: expect.any(String), session_id: expect.any(String) };
    for (const id of http) {
      const own = lines.filter((l) => l.http_request_id === id);
      expect(own.length).toBeGreaterThan(0);
      // A delete names no API request: its task (and session), or its session.
      const expected = id.startsWith('delete-session')
        ? { session_id: 'audit-session' }
        : id.startsWith('delete-task')
          ? { task_id: ids.first.task_id, session_id: ids.first.session_id }
          : request;
      for (const l of own) expect(l).toEqual(expect.objectContaining({ ...caller, ...expected }));
    }
    const invokeLines = lines.filter((l) => l.http_request_id === http[0]);
    expect(invokeLines.every((l) => l.request_id === ids.first.request_id && l.task_id === ids.first.task_id)).toBe(true);
  });

  it('joins the lines of one task across its calls by task_id', () => {
    const ofTask = lines.filter((l) => l.task_id === ids.first.task_id);
    const calls = new Set(ofTask.map((l) => String(l.http_request_id).split('-').slice(0, -5).join('-')));
    expect([...calls].sort()).toEqual(['approve', 'cancel', 'delete-task', 'edit', 'fails', 'follow-on', 'follow-on-2', 'invoke', 'reject'].sort());
    // The lines of the other task are not among them.
    expect(ofTask.some((l) => l.request_id === ids.other.request_id)).toBe(false);
  });

  it('answers a model failure with the task_id and request_id of the Failed request', async () => {
    expect(failed.status).toBe(502);
    expect(failed.body).toMatchObject({
      code: 'LLM_UNAVAILABLE',
      task_id: ids.first.task_id,
      session_id: ids.first.session_id,
      request_id: expect.any(String),
    });
    // The run's own line (logged deep in the run, not at the edge) names the request too.
    const failedLines = lines.filter((l) => l.request_id === failed.body.request_id);
    expect(failedLines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          msg: 'model provider call failed',
          level: 'warn',
          code: 'LLM_UNAVAILABLE',
          provider_status: 502,
          task_id: ids.first.task_id,
          agent: 'Guard:1',
        }),
        expect.objectContaining({ msg: 'request completed', status: 502 }),
      ]),
    );
  });

  it('writes an audit record for each approval, rejection, cancel, edit and delete', () => {
    const audit = lines.filter((l) => l.audit === true);
    const one = (event: string) => {
      const found = audit.filter((l) => l.event === event);
      expect(found).toHaveLength(1);
      const [line] = found;
      for (const k of AUDIT_SCHEMA_KEYS) expect(line).toHaveProperty(k);
      expect(line!.at).toMatch(ISO);
      expect(line).toMatchObject({ tid: DEV_TENANT, oid_hash: oidHash('dev-user'), agent: 'Guard:1', level: 'info' });
      return line!;
    };
    expect(one('approval.approved')).toMatchObject({ ...ids.first, pause_id: expect.any(String), tool_calls: [{ id: 'c1', name: 'Notes-wipe' }] });
    expect(one('approval.rejected')).toMatchObject({ ...ids.rejected, tool_calls: [{ id: 'c2', name: 'Notes-wipe' }], reason: 'not that one' });
    expect(one('request.cancelled')).toMatchObject({ ...ids.canceled, status: 200 });
    expect(one('request.edited')).toMatchObject({ ...ids.edited, edited_request_id: ids.first.request_id });
    expect(one('task.deleted')).toMatchObject({ task_id: ids.first.task_id, session_id: ids.first.session_id });
    expect(one('session.deleted')).toMatchObject({ session_id: 'audit-session' });
  });

  it('appends the same audit records to the TA_AUDIT_LOG file', () => {
    const audit = lines.filter((l) => l.audit === true);
    expect(fileLines).toHaveLength(audit.length);
    for (const record of fileLines) {
      expect(record.audit).toBe(true);
      expect(audit).toContainEqual(expect.objectContaining(record));
    }
  });
});

/** The echo and chat agents in Entra mode, tenant `allowed` only, debug logs, the audit log in a file of its own. */
async function startAuditedEntraApp(allowed: string): Promise<{ issuer: OidcIssuer; t: TestApp; auditPath: string }> {
  const issuer = await startOidcIssuer();
  const auditPath = join(mkdtempSync(join(tmpdir(), 'ta-audit-')), 'audit.jsonl');
  const t = await startTestApp({
    agents: { 'echo.yaml': ECHO, 'strict.yaml': STRICT, 'chat.yaml': CHAT },
    env: entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: allowed, TA_ENTRA_JWKS_COOLDOWN_MS: '0', TA_LOG_LEVEL: 'debug', TA_AUDIT_LOG: auditPath }),
  });
  return { issuer, t, auditPath };
}

describe('audit of refused callers (entra mode)', () => {
  const T1 = 'c0ffee00-0000-4000-8000-0000000000b1';
  const T9 = 'c0ffee00-0000-4000-8000-0000000000b9';
  let issuer: OidcIssuer;
  let t: TestApp;
  let closed = false;
  let auditPath: string;

  beforeAll(async () => {
    ({ issuer, t, auditPath } = await startAuditedEntraApp(T1));
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await issuer?.close();
  });

  it('records each refusal with its reason and, for a genuine token, its tenant, never the token; an accepted caller is named by tid and hashed oid', async () => {
    const garbage = 'not-a-jwt-SECRET-TOKEN-TEXT';
    const foreign = await issuer.mint({ tid: T9 });
    const oid = randomUUID();
    const good = await issuer.mint({ tid: T1, oid });
    const send = (token: string, id: string) => postJson(`${t.url}/Echo/1`, say('hello'), { authorization: `Bearer ${token}`, 'x-request-id': id });

    expect((await send(garbage, 'bad-token')).status).toBe(401);
    expect((await send(foreign, 'foreign-tenant')).status).toBe(401);
    const ok = await send(good, 'good-token');
    expect(ok.status).toBe(200);
    // A token accepted once, then answered from the validated-token cache (synchronously) for an agent needing another scope.
    const otherOid = randomUUID();
    const cached = await issuer.mint({ tid: T1, oid: otherOid });
    expect((await send(cached, 'cached-first')).status).toBe(200);
    const strict = await postJson(`${t.url}/Strict/1`, say('hello'), { authorization: `Bearer ${cached}`, 'x-request-id': 'cached-forbidden' });
    expect(strict.status).toBe(403);
    // The /stream socket authenticates outside Express: its refusals are audited alike.
    expect((await refusedUpgrade(`${wsUrl(t.url)}/ChatBot/1.0/stream`, { authorization: `Bearer ${garbage}`, 'x-request-id': 'ws-bad-token' })).status).toBe(
      401,
    );
    await waitFor('the request lines', () =>
      ['bad-token', 'foreign-tenant', 'good-token', 'cached-forbidden'].every((id) =>
        t.logs().some((l) => l.msg === 'request completed' && l.http_request_id === id),
      ),
    );

    const refusals = t.logs().filter((l) => l.audit === true && l.event === 'auth.failed');
    expect(refusals).toEqual([
      expect.objectContaining({
        http_request_id: 'bad-token',
        agent: 'Echo:1',
        code: 'UNAUTHENTICATED',
        reason: expect.stringContaining('Invalid bearer token'),
        at: expect.stringMatching(ISO),
      }),
      expect.objectContaining({
        http_request_id: 'foreign-tenant',
        agent: 'Echo:1',
        code: 'UNAUTHENTICATED',
        tid: T9,
        reason: expect.stringContaining('tenant'),
      }),
      expect.objectContaining({
        http_request_id: 'cached-forbidden',
        agent: 'Strict:1',
        code: 'FORBIDDEN',
        tid: T1,
        claimed_oid: otherOid,
      }),
      expect.objectContaining({
        http_request_id: 'ws-bad-token',
        agent: 'ChatBot:1.0',
        code: 'UNAUTHENTICATED',
        reason: expect.stringContaining('Invalid bearer token'),
      }),
    ]);
    expect(refusals[0]).not.toHaveProperty('tid');
    // Authentication itself logs before the task is known; every line after names it.
    const accepted = t.logs().filter((l) => l.http_request_id === 'good-token');
    expect(accepted[0]).toMatchObject({ msg: 'bearer token accepted', tid: T1, oid_hash: oidHash(oid), agent: 'Echo:1' });
    expect(accepted.length).toBeGreaterThan(1);
    for (const l of accepted.slice(1)) {
      expect(l).toMatchObject({ tid: T1, oid_hash: oidHash(oid), agent: 'Echo:1', task_id: ok.body.task_id, request_id: ok.body.request_id });
    }

    await t.close();
    closed = true;
    const file = readFileSync(auditPath, 'utf8');
    expect(auditFileLines(auditPath).map((l) => l.event)).toEqual(['auth.failed', 'auth.failed', 'auth.failed', 'auth.failed']);
    for (const token of [garbage, foreign, good, cached]) {
      for (const part of token.split('.').filter((p) => p.length > 8)) {
        expect(t.rawLogs()).not.toContain(part);
        expect(file).not.toContain(part);
      }
    }
    expect(t.rawLogs()).not.toContain(oid);
  });
});

describe('auth.failed names the identity a refused token claims, marked unverified (entra mode)', () => {
  const T1 = 'c0ffee00-0000-4000-8000-0000000000c1';
  const T9 = 'c0ffee00-0000-4000-8000-0000000000c9';
  let issuer: OidcIssuer;
  let t: TestApp;
  let closed = false;
  let auditPath: string;

  beforeAll(async () => {
    ({ issuer, t, auditPath } = await startAuditedEntraApp(T1));
  });
  afterAll(async () => {
    if (!closed) await t?.close();
    await issuer?.close();
  });

  const send = (token: string, id: string) => postJson(`${t.url}/Echo/1`, say('hello'), { authorization: `Bearer ${token}`, 'x-request-id': id });
  const refusal = (id: string) => t.logs().find((l) => l.audit === true && l.event === 'auth.failed' && l.http_request_id === id);

  it('a forged signature: claimed_tid and claimed_oid as the token says, never a tid or oid_hash, and no part of the token in any log line or the audit file', async () => {
    const oid = randomUUID().toUpperCase();
    const forged = await issuer.mint({ tid: T1.toUpperCase(), oid, key: await issuer.foreignKey(issuer.current.kid) });
    const other = randomUUID();
    const forgedWs = await issuer.mint({ tid: T1, oid: other, key: await issuer.foreignKey(issuer.current.kid) });
    const foreign = await issuer.mint({ tid: T9, oid: other });

    expect((await send(forged, 'forged')).status).toBe(401);
    expect((await send(foreign, 'foreign')).status).toBe(401);
    expect((await refusedUpgrade(`${wsUrl(t.url)}/ChatBot/1.0/stream`, { authorization: `Bearer ${forgedWs}`, 'x-request-id': 'ws-forged' })).status).toBe(401);
    await waitFor('the audit lines', () => ['forged', 'foreign', 'ws-forged'].every((id) => refusal(id)));

    expect(refusal('forged')).toMatchObject({
      code: 'UNAUTHENTICATED',
      reason: 'Invalid bearer token: the signature is not valid',
      claimed_tid: T1,
      claimed_oid: oid.toLowerCase(),
    });
    expect(refusal('forged')).not.toHaveProperty('tid');
    expect(refusal('forged')).not.toHaveProperty('oid_hash');
    // A genuine token refused afterwards: its tenant is verified (tid), and it claims the same.
    expect(refusal('foreign')).toMatchObject({ tid: T9, claimed_tid: T9, claimed_oid: other });
    expect(refusal('ws-forged')).toMatchObject({ agent: 'ChatBot:1.0', claimed_tid: T1, claimed_oid: other });

    await t.close();
    closed = true;
    const file = readFileSync(auditPath, 'utf8');
    expect(auditFileLines(auditPath)).toContainEqual(expect.objectContaining({ http_request_id: 'forged', claimed_tid: T1, claimed_oid: oid.toLowerCase() }));
    for (const token of [forged, forgedWs, foreign]) {
      const [header, payload, signature] = token.split('.');
      for (const part of [header!, payload!, signature!, payload!.slice(0, 24), signature!.slice(0, 24)]) {
        expect(t.rawLogs()).not.toContain(part);
        expect(file).not.toContain(part);
      }
    }
  });
});

describe('auth.failed claims only what reads as an Entra identity (entra mode)', () => {
  let issuer: OidcIssuer;
  let t: TestApp;

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({ agents: { 'echo.yaml': ECHO }, env: entraEnv(issuer, { TA_ENTRA_JWKS_COOLDOWN_MS: '0' }) });
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  it('a malformed token, or claims that are not GUIDs (a long text, a forged log line), give no claimed field and none of that text', async () => {
    const claims = claimsOf(await issuer.mint());
    const injected = 'evil\n{"audit":true,"event":"approval.approved","tid":"x"}';
    const tokens: Record<string, string> = {
      'three-garbage-segments': 'aaa.bbb.ccc',
      'payload-not-json': `${base64url.encode('{"alg":"RS256","kid":"k"}')}.${base64url.encode('not json')}.c2ln`,
      'payload-an-array': `${base64url.encode('{"alg":"RS256","kid":"k"}')}.${base64url.encode('["x"]')}.c2ln`,
      'long-and-injected': unsignedToken({ ...claims, tid: 'T'.repeat(4000), oid: injected }),
      numbers: unsignedToken({ ...claims, tid: 42, oid: { guid: randomUUID() } }),
    };
    for (const [id, token] of Object.entries(tokens)) {
      const res = await postJson(`${t.url}/Echo/1`, say('hello'), { authorization: `Bearer ${token}`, 'x-request-id': id });
      expect(res.status).toBe(401);
    }
    await waitFor('the audit lines', () => Object.keys(tokens).every((id) => t.logs().some((l) => l.event === 'auth.failed' && l.http_request_id === id)));
    for (const id of Object.keys(tokens)) {
      const line = t.logs().find((l) => l.event === 'auth.failed' && l.http_request_id === id)!;
      expect(line).not.toHaveProperty('claimed_tid');
      expect(line).not.toHaveProperty('claimed_oid');
    }
    expect(t.rawLogs()).not.toContain('TTTTTTTT');
    expect(t.rawLogs()).not.toContain('evil');
  });
});

describe('log correlation of a run handed over in the background', () => {
  const QUEUE = v3Agent('Queue', { description: 'Agent that enqueues follow-ons', concurrency: { on_busy: 'enqueue' } });
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    t = await startTestApp({ agents: { 'queue.yaml': QUEUE }, env: fakeModelEnv(llm) });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('names the queued request, not the call that handed it over, on the lines of its run', async () => {
    let release!: () => void;
    llm.script(reply.text('first', { until: new Promise<void>((r) => (release = r)) }), reply.error(502));
    const running = postJson(`${t.url}/Queue/1`, say('one', { task_id: 'handover-task' }), { 'x-request-id': 'runs-first' });
    await llm.waitForRequest(0);
    const queued = await postJson(`${t.url}/Queue/1`, say('two', { task_id: 'handover-task' }), { 'x-request-id': 'queues-second' });
    expect(queued.status).toBe(202);
    release();
    expect((await running).status).toBe(200);

    await waitFor('the queued run to fail', () => t.logs().some((l) => l.msg === 'model provider call failed'));
    const line = t.logs().find((l) => l.msg === 'model provider call failed')!;
    expect(line).toMatchObject({
      request_id: queued.body.request_id,
      task_id: 'handover-task',
      session_id: queued.body.session_id,
      agent: 'Queue:1',
      tid: DEV_TENANT,
      oid_hash: oidHash('dev-user'),
      trace_id: expect.stringMatching(HEX32),
      provider_status: 502,
    });
    expect(line).not.toHaveProperty('http_request_id');
  });
});

describe('log correlation of a stateless (v1/v2) call', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents') });
  });
  afterAll(() => t?.close());

  it("names the API's request_id and session_id beside the HTTP request id", async () => {
    const res = await postJson(`${t.url}/EchoAgent/0.1`, { chat_history: [{ role: 'user', content: 'hello' }] }, { 'x-request-id': 'stateless-call' });
    expect(res.status).toBe(200);
    await waitFor('the request line', () => t.logs().some((l) => l.msg === 'request completed' && l.http_request_id === 'stateless-call'));
    const line = t.logs().find((l) => l.msg === 'request completed' && l.http_request_id === 'stateless-call');
    expect(line).toMatchObject({
      request_id: res.body.request_id,
      session_id: res.body.session_id,
      agent: 'EchoAgent:0.1',
      tid: DEV_TENANT,
      oid_hash: oidHash('dev-user'),
    });
  });
});
