/**
 * Human approval of risky tool calls in v3 agents, over real HTTP with real plugins; only the model
 * vendor is fake. Invariants: a call that needs approval never runs before a decision; a pause is
 * decided exactly once (approve twice → 409; approve racing reject → exactly one winner, also
 * across two app instances sharing Redis); the model sees every decision as the calls' results.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { testRedisUrl, uniqueName } from '../support/services';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { modelInput, v3Client } from '../support/v3-client';

interface NotesState {
  calls: Record<string, number>;
}
const notes: NotesState = ((globalThis as { __notes?: NotesState }).__notes = { calls: {} });

const NOTES_PLUGIN = `
const count = (name) => { const c = globalThis.__notes.calls; c[name] = (c[name] ?? 0) + 1; };
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'read', description: 'Reads a note', parameters: id, risk: 'read_only', handler: ({ id }) => { count('read'); return 'note ' + id; } },
  { name: 'peek', description: 'Reads a secret note', parameters: id, risk: 'read_only', handler: ({ id }) => { count('peek'); return 'secret ' + id; } },
  { name: 'edit', description: 'Edits a note', parameters: id, risk: 'write_low_risk', handler: ({ id }) => { count('edit'); return 'edited ' + id; } },
  { name: 'wipe', description: 'Deletes a note', parameters: id, handler: ({ id }) => { count('wipe'); return 'wiped ' + id; } },
] }];
`;

const agent = (name: string, governance: string) => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: Approvals e2e
spec:
  governance:
${governance.replace(/^/gm, '    ')}
  agent:
    name: default
    model: gpt-test
    system_prompt: Be careful.
    plugins: [Notes]
`;
const HITL_PEEK = 'tools:\n  Notes-peek: {requires_hitl: true}';

const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
/** A pending call as the HitlResponse lists it: SK's FunctionCallContent fields, then its risk and why it waits. */
const pendingCall = (id: string, name: string, args: unknown, index: number, risk: string, approval_reason: string) => ({
  ...{ inner_content: null, ai_model_id: null, metadata: {}, content_type: 'function_call', index },
  ...{ id, name, function_name: name.split('-')[1], plugin_name: name.split('-')[0], arguments: JSON.stringify(args) },
  ...{ risk, approval_reason },
});

const idsOf = (r: { task_id: string; session_id: string; request_id: string }) => ({ task_id: r.task_id, session_id: r.session_id, request_id: r.request_id });

async function startApps(llm: FakeOpenAi, count: number, store?: () => RedisStateStore): Promise<TestApp[]> {
  const dir = writeAgentDir({
    'guard.yaml': agent('Guard', `autonomy_level: L1\n${HITL_PEEK}`),
    'trusted.yaml': agent('Trusted', `autonomy_level: L3\n${HITL_PEEK}`),
    'strict.yaml': agent('Strict', 'autonomy_level: L0'),
  });
  writeFileSync(join(dir, 'custom_plugins.js'), NOTES_PLUGIN);
  const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
  return Promise.all(Array.from({ length: count }, () => startTestApp({ configPath: dir, env, store: store?.() })));
}

describe('v3 approvals (one instance)', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;
  const resume = (requestId: string, body: unknown, headers?: Record<string, string>) =>
    postJson(`${t.url}/Guard/1/tealagents/v1alpha1/resume/${requestId}`, body, headers);

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    [t] = await startApps(llm, 1);
    api = v3Client(`${t.url}/Guard/1`);
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => (notes.calls = {}));
  afterEach(() => expect(llm.pending()).toBe(0));

  /** Invokes Guard with one scripted tool turn; expects a pause. */
  async function pauseWith(calls: ReturnType<typeof tc>[], agentName = 'Guard') {
    llm.script(reply.toolCalls(calls, { text: 'On it.' }));
    const res = await postJson(`${t.url}/${agentName}/1`, { items: [{ content_type: 'text', content: 'do it' }] });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('Paused');
    return res.body;
  }

  it('cancels a paused request: its calls never run, the pause can no longer be decided, and the task moves on', async () => {
    const paused = await pauseWith([tc('c1', 'Notes-wipe', { id: 'z' })]);
    const cancelUrl = `${t.url}/Guard/1/tasks/${paused.task_id}/cancel`;
    expect((await postJson(cancelUrl, {}, { 'x-dev-user': 'mallory' })).status).toBe(401);
    const cancel = await postJson(cancelUrl, {});
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ task_id: paused.task_id, request_id: paused.request_id, status: 'Canceled' });

    const late = await resume(paused.request_id, { action: 'approve' });
    expect(late.status).toBe(409);
    expect(notes.calls).toEqual({});
    const task = await api.task(paused.task_id);
    expect(task.body).toMatchObject({ status: 'Canceled', pending_approvals: [], requests: [{ status: 'Canceled' }] });
    expect((await postJson(cancelUrl, {})).status).toBe(409); // nothing left to cancel

    llm.script(reply.text('fresh start'));
    const next = await api.say('again', { task_id: paused.task_id });
    expect(next.body).toMatchObject({ status: 'Completed', content: { output: 'fresh start' } });
  });

  it('L1 runs read-only tools at once', async () => {
    llm.script(reply.toolCalls([tc('r1', 'Notes-read', { id: 'a' })]), reply.text('read it'));
    const res = await api.say('read a');
    expect(res.body).toMatchObject({ status: 'Completed', content: { output: 'read it' } });
    expect(notes.calls).toEqual({ read: 1 });
  });

  it('L1 pauses on a high-risk call (nothing runs), answers HitlResponse, then approve runs it and the model answers', async () => {
    const paused = await pauseWith([tc('w1', 'Notes-wipe', { id: 'a' })]);
    const ids = { task_id: paused.task_id, session_id: paused.session_id, request_id: paused.request_id };
    const pauseId = paused.content.pause_id;
    expect(pauseId).toMatch(/^[0-9a-f-]{36}$/);
    expect(paused.content).toEqual({
      ...ids,
      message: 'Human intervention required.',
      approval_url: `/Guard/1/tealagents/v1alpha1/resume/${ids.request_id}?action=approve&pause_id=${pauseId}`,
      rejection_url: `/Guard/1/tealagents/v1alpha1/resume/${ids.request_id}?action=reject&pause_id=${pauseId}`,
      tool_calls: [pendingCall('w1', 'Notes-wipe', { id: 'a' }, 0, 'write_high_risk', 'autonomy_level')],
      plan: false,
      pause_id: pauseId,
      autonomy_level: 'L1',
      expires_at: null,
    });
    expect(notes.calls).toEqual({});

    const task = await api.task(ids.task_id);
    expect(task.body).toMatchObject({ status: 'Paused', running_request_id: null, requests: [{ status: 'Paused' }] });
    expect(task.body.pending_approvals).toEqual([
      {
        request_id: ids.request_id,
        pause_id: pauseId,
        plan: false,
        requested_at: expect.any(String),
        expires_at: null,
        approval_url: paused.content.approval_url,
        rejection_url: paused.content.rejection_url,
        tool_calls: paused.content.tool_calls,
      },
    ]);
    // a follow-on while paused is refused (409 TASK_PAUSED, as upstream; on_paused: refine takes it instead)
    expect((await api.say('hello?', { task_id: ids.task_id })).body.code).toBe('TASK_PAUSED');
    // another owner may not decide
    expect((await resume(ids.request_id, { action: 'approve' }, { 'x-dev-user': 'mallory' })).status).toBe(401);

    llm.script(reply.text('Wiped a.'));
    const done = await resume(ids.request_id, { action: 'approve' });
    expect(done.status).toBe(200);
    // upstream's resume body: the TealAgentsResponse itself (plus our status)
    expect(done.body).toMatchObject({ ...ids, status: 'Completed', output: 'Wiped a.' });
    expect(notes.calls).toEqual({ wipe: 1 });
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be careful.'],
      ['user', 'do it'],
      ['assistant', 'On it.'],
      ['tool', 'wiped a'],
    ]);
    expect(llm.requests.at(-1)!.body.messages[2].tool_calls).toEqual([
      { id: 'w1', type: 'function', function: { name: 'Notes-wipe', arguments: '{"id":"a"}' } },
    ]);

    // approving twice: already decided
    const again = await resume(ids.request_id, { action: 'approve' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('APPROVAL_ALREADY_DECIDED');
    const after = await api.task(ids.task_id);
    expect(after.body).toMatchObject({ status: 'Completed', pending_approvals: [] });
    expect(after.body.requests[0].approvals).toEqual([
      {
        pause_id: pauseId,
        action: 'approve',
        approved: ['w1'],
        rejected: [],
        decided_by: expect.any(String),
        decided_at: expect.any(String),
        reason: null,
        reasons: {},
      },
    ]);
    expect(after.body.requests[0].tool_calls).toMatchObject([{ id: 'w1', outcome: 'ok', result: 'wiped a' }]);

    // the task goes on, and a follow-on replays the whole approved round
    llm.script(reply.text('ok'));
    expect((await api.say('thanks', { task_id: ids.task_id })).body.status).toBe('Completed');
    expect(modelInput(llm.requests.at(-1)!.body).slice(1)).toEqual([
      ['user', 'do it'],
      ['assistant', 'On it.'],
      ['tool', 'wiped a'],
      ['assistant', 'Wiped a.'],
      ['user', 'thanks'],
    ]);
  });

  it('a request that never paused is 409 TASK_NOT_PAUSED; an unknown one 404', async () => {
    llm.script(reply.text('hi'));
    const res = await api.say('hi');
    const r = await resume(res.body.request_id, { action: 'approve' });
    expect([r.status, r.body.code]).toEqual([409, 'TASK_NOT_PAUSED']);
    expect((await resume('00000000-0000-4000-8000-000000000000', { action: 'approve' })).status).toBe(404);
    expect((await resume(res.body.request_id, { action: 'maybe' })).status).toBe(422);
  });

  it('reject of every pending call: nothing runs, no model call, the request and the task end Canceled (rejected)', async () => {
    const paused = await pauseWith([tc('w1', 'Notes-wipe', { id: 'a' })]);
    const calls = llm.requests.length;
    const res = await resume(paused.request_id, { action: 'reject', reason: 'not today' });
    expect(res.status).toBe(200);
    // upstream's RejectedToolResponse (plus our status and reason)
    expect(res.body).toEqual({ ...idsOf(paused), message: 'Tool excecution rejected.', status: 'Canceled', reason: 'rejected' });
    expect(llm.requests).toHaveLength(calls);
    expect(notes.calls).toEqual({});
    const task = await api.task(paused.task_id);
    expect(task.body).toMatchObject({ status: 'Canceled', pending_approvals: [], requests: [{ status: 'Canceled', reason: 'rejected' }] });
    expect(task.body.requests[0].tool_calls).toMatchObject([{ id: 'w1', outcome: 'rejected', result: expect.stringContaining('not today') }]);
    expect(task.body.requests[0].approvals).toMatchObject([{ action: 'reject', rejected: ['w1'], reason: 'not today' }]);
    expect((await resume(paused.request_id, { action: 'approve' })).body.code).toBe('APPROVAL_ALREADY_DECIDED');
  });

  it('tool results in a resume body answer client-side calls only: for a call that waits for approval 409 NOT_A_CLIENT_TOOL_CALL, nothing decided or run, the pause still decidable', async () => {
    const paused = await pauseWith([tc('w1', 'Notes-wipe', { id: 'a' })]);
    for (const body of [{ results: { w1: 'wiped a' } }, { action: 'approve', pause_id: paused.content.pause_id, results: { w1: 'wiped a' } }]) {
      const r = await resume(paused.request_id, body);
      expect([r.status, r.body.code]).toEqual([409, 'NOT_A_CLIENT_TOOL_CALL']);
      expect(r.body.detail).toContain('w1');
    }
    expect(notes.calls).toEqual({});
    expect((await api.task(paused.task_id)).body).toMatchObject({
      status: 'Paused',
      requests: [{ status: 'Paused', approvals: [], tool_calls: [] }],
      pending_approvals: [{ pause_id: paused.content.pause_id }],
    });

    llm.script(reply.text('Wiped.'));
    const approved = await resume(paused.request_id, { action: 'approve', pause_id: paused.content.pause_id });
    expect(approved.body).toMatchObject({ status: 'Completed', output: 'Wiped.' });
    expect(notes.calls).toEqual({ wipe: 1 });
    expect((await api.task(paused.task_id)).body.requests[0].tool_calls).toMatchObject([{ id: 'w1', outcome: 'ok', result: 'wiped a' }]);
  });

  it('a partial rejection runs on: the model sees the rejected call with the reason given, and may pause again', async () => {
    const paused = await pauseWith([tc('e1', 'Notes-edit', { id: 'a' }), tc('w1', 'Notes-wipe', { id: 'a' })]);
    llm.script(reply.toolCalls([tc('w2', 'Notes-wipe', { id: 'b' })]));
    const again = await resume(paused.request_id, {
      decisions: [
        { tool_call_id: 'e1', approved: true },
        { tool_call_id: 'w1', approved: false, reason: 'keep a' },
      ],
    });
    expect(again.body).toMatchObject({ request_id: paused.request_id, status: 'Paused', message: 'Human intervention required.', tool_calls: [{ id: 'w2' }] });
    expect(again.body.pause_id).not.toBe(paused.content.pause_id);
    expect(notes.calls).toEqual({ edit: 1 });
    const input = llm.requests.at(-1)!.body.messages;
    expect(input.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'w1',
      content: expect.stringMatching(/^Error: the user rejected this call of Notes-wipe.*keep a/),
    });

    const calls = llm.requests.length;
    const done = await resume(paused.request_id, { action: 'approve', decisions: [{ tool_call_id: 'w2', approved: false }] });
    expect(done.body).toMatchObject({ status: 'Canceled', reason: 'rejected' });
    expect(llm.requests).toHaveLength(calls); // no model call after a rejection of every pending call
    const task = await api.task(paused.task_id);
    expect(task.body.requests[0].tool_calls).toMatchObject([
      { id: 'e1', outcome: 'ok' },
      { id: 'w1', outcome: 'rejected' },
      { id: 'w2', outcome: 'rejected' },
    ]);
    expect(task.body.requests[0].approvals).toHaveLength(2);
    expect(task.body.requests[0].approvals[0].reasons).toEqual({ w1: 'keep a' });
    expect(notes.calls).toEqual({ edit: 1 });
  });

  it('partial decisions: each call by its decision, the rest by action; calls needing no approval run with them', async () => {
    const paused = await pauseWith([tc('r1', 'Notes-read', { id: 'x' }), tc('w1', 'Notes-wipe', { id: 'a' })]);
    expect(paused.content.tool_calls.map((c: { id: string }) => c.id)).toEqual(['w1']);
    // a decision about a call that is not pending is refused (409) without deciding anything
    const bad = await resume(paused.request_id, { action: 'approve', decisions: [{ tool_call_id: 'r1', approved: false }] });
    expect([bad.status, bad.body.code]).toEqual([409, 'APPROVAL_ALREADY_DECIDED']);
    expect(notes.calls).toEqual({});

    const p2 = await pauseWith([tc('e1', 'Notes-edit', { id: 'a' }), tc('w2', 'Notes-wipe', { id: 'b' })]);
    expect(p2.content.tool_calls.map((c: { id: string }) => c.id)).toEqual(['e1', 'w2']);
    llm.script(reply.text('Edited a only.'));
    const done = await resume(p2.request_id, { action: 'approve', decisions: [{ tool_call_id: 'w2', approved: false }] });
    expect(done.body.status).toBe('Completed');
    expect(notes.calls).toEqual({ edit: 1 });
    expect(modelInput(llm.requests.at(-1)!.body).slice(-2)).toEqual([
      ['tool', 'edited a'],
      ['tool', expect.stringMatching(/user rejected this call of Notes-wipe/)],
    ]);

    // the first pause is still waiting: approve it now
    llm.script(reply.text('done'));
    expect((await resume(paused.request_id, { action: 'approve' })).body.status).toBe('Completed');
    expect(notes.calls).toEqual({ edit: 1, read: 1, wipe: 1 });
  });

  it('plan_threshold: a turn of 3+ calls with one risky call is one plan, decided as a whole', async () => {
    const calls = [tc('r1', 'Notes-read', { id: '1' }), tc('r2', 'Notes-read', { id: '2' }), tc('w1', 'Notes-wipe', { id: '3' })];
    const paused = await pauseWith(calls);
    expect(paused.content).toMatchObject({ plan: true, plan_id: paused.content.pause_id, tool_calls: calls });
    const split = await resume(paused.request_id, { action: 'approve', decisions: [{ tool_call_id: 'r1', approved: false }] });
    expect([split.status, split.body.errors?.[0]?.field]).toEqual([422, 'decisions']);
    const calls_ = llm.requests.length;
    const rejected = await resume(paused.request_id, { action: 'reject' });
    expect(rejected.body).toMatchObject({ status: 'Canceled', reason: 'rejected' });
    expect(llm.requests).toHaveLength(calls_);
    expect(notes.calls).toEqual({});
    const task = await api.task(paused.task_id);
    expect(task.body.requests[0].tool_calls.map((c: { outcome: string }) => c.outcome)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('L3 runs every risk level, but requires_hitl always asks; L0 asks even for read-only', async () => {
    llm.script(reply.toolCalls([tc('w1', 'Notes-wipe', { id: 'a' }), tc('e1', 'Notes-edit', { id: 'b' })]), reply.text('done'));
    const res = await postJson(`${t.url}/Trusted/1`, { items: [{ content_type: 'text', content: 'go' }] });
    expect(res.body.status).toBe('Completed');
    expect(notes.calls).toEqual({ wipe: 1, edit: 1 });

    const peek = await pauseWith([tc('p1', 'Notes-peek', { id: 's' })], 'Trusted');
    expect(peek.content.tool_calls).toEqual([pendingCall('p1', 'Notes-peek', { id: 's' }, 0, 'read_only', 'requires_hitl')]);
    const strict = await pauseWith([tc('r1', 'Notes-read', { id: 'a' })], 'Strict');
    expect(strict.content.tool_calls).toEqual([pendingCall('r1', 'Notes-read', { id: 'a' }, 0, 'read_only', 'autonomy_level')]);
    expect(notes.calls).toEqual({ wipe: 1, edit: 1 });
  });

  it('SSE: approval-required then final-response (Paused); the resume stream: approved, tool events, final-response', async () => {
    llm.script(reply.toolCalls([tc('w1', 'Notes-wipe', { id: 'a' }), tc('e1', 'Notes-edit', { id: 'b' })]));
    const s = await openSse(`${t.url}/Guard/1/sse`, { items: [{ content_type: 'text', content: 'go' }] });
    const events = parseSse(await s.readAll()).filter((e) => !e.comment);
    expect(events.map((e) => e.event)).toEqual(['approval-required', 'final-response']);
    const required = JSON.parse(events[0]!.data);
    const final = JSON.parse(events[1]!.data);
    expect(final).toMatchObject({ status: 'Paused', content: { tool_calls: [{ id: 'w1' }, { id: 'e1' }] } });
    expect(required).toEqual(final.content);

    llm.script(reply.text('Edited, not wiped.'));
    const r = await openSse(`${t.url}/Guard/1/tealagents/v1alpha1/resume/${final.request_id}/sse`, {
      action: 'approve',
      decisions: [{ tool_call_id: 'w1', approved: false }],
    });
    const revents = parseSse(await r.readAll()).filter((e) => !e.comment);
    const names = revents.map((e) => e.event).filter((e, i, all) => e !== 'partial-response' || all[i - 1] !== e);
    expect(names).toEqual(['approved', 'rejected', 'tool-call', 'tool-result', 'tool-result', 'partial-response', 'final-response']);
    expect(JSON.parse(revents[0]!.data)).toMatchObject({ request_id: final.request_id, tool_call_ids: ['e1'] });
    expect(JSON.parse(revents[1]!.data)).toMatchObject({ tool_call_ids: ['w1'] });
    expect(JSON.parse(revents.at(-1)!.data)).toMatchObject({ status: 'Completed', content: { output: 'Edited, not wiped.' } });
    const ids = [...events, ...revents].map((e) => Number(e.id!.split('-')[1]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(notes.calls).toEqual({ edit: 1 });
  });

  it('approve racing reject, many times: exactly one winner, the loser 409 APPROVAL_ALREADY_DECIDED', async () => {
    for (let i = 0; i < 10; i++) {
      const paused = await pauseWith([tc('w1', 'Notes-wipe', { id: String(i) })]);
      llm.script(reply.text('after'));
      const results = await Promise.all([resume(paused.request_id, { action: 'approve' }), resume(paused.request_id, { action: 'reject' })]);
      const codes = results.map((r) => (r.status === 200 ? 'won' : r.body.code)).sort();
      expect(codes).toEqual(['APPROVAL_ALREADY_DECIDED', 'won']);
      const winner = results.findIndex((r) => r.status === 200);
      expect(notes.calls.wipe ?? 0).toBe(winner === 0 ? 1 : 0);
      notes.calls = {};
      const task = await api.task(paused.task_id);
      expect(task.body.requests[0].approvals).toHaveLength(1);
    }
  });
});

describe('v3 approvals: two instances sharing Redis', () => {
  let llm: FakeOpenAi;
  let apps: TestApp[];

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const keyPrefix = `${uniqueName('v3-approvals')}:`;
    apps = await startApps(llm, 2, () => new RedisStateStore({ url: testRedisUrl(), keyPrefix }));
  }, 60_000);
  afterAll(async () => {
    await Promise.all((apps ?? []).map((a) => a.close()));
    await llm?.close();
  });

  it('paused on one, approve (on A) racing reject (on B): exactly one winner, each time', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const wins = { approve: 0, reject: 0 };
    for (let i = 0; i < 10; i++) {
      notes.calls = {};
      llm.script(reply.toolCalls([tc('w1', 'Notes-wipe', { id: String(i) })]));
      const paused = await postJson(`${(i % 2 ? a : b).url}/Guard/1`, { items: [{ content_type: 'text', content: 'wipe' }] });
      expect(paused.body.status).toBe('Paused');
      llm.script(reply.text('after'));
      const path = `/Guard/1/tealagents/v1alpha1/resume/${paused.body.request_id}`;
      const [ra, rb] = await Promise.all([postJson(a.url + path, { action: 'approve' }), postJson(b.url + path, { action: 'reject' })]);
      expect([ra.status, rb.status].sort()).toEqual([200, 409]);
      expect((ra.status === 409 ? ra : rb).body.code).toBe('APPROVAL_ALREADY_DECIDED');
      expect(notes.calls.wipe ?? 0).toBe(ra.status === 200 ? 1 : 0);
      wins[ra.status === 200 ? 'approve' : 'reject']++;
      const task = await v3Client(`${b.url}/Guard/1`).task(paused.body.task_id);
      // a rejection of the only pending call ends the request (no model call): the script is used only by an approval
      expect(task.body).toMatchObject({ status: ra.status === 200 ? 'Completed' : 'Canceled', pending_approvals: [] });
      llm.discard(); // unused when the rejection won
      expect(task.body.requests[0].approvals).toHaveLength(1);
    }
    expect(wins.approve + wins.reject).toBe(10);
    expect(llm.pending()).toBe(0);
  });
});
