/**
 * Compatibility with upstream teal-agents' tealagents/v1alpha1 service, v3 half: every response
 * shape a client of the Python service parses, checked field by field against upstream's pydantic
 * models (transcribed in test/support/upstream-v3-models.ts) on the real server over HTTP — key
 * sets, types, enum values, SSE event names and frames — including the resume route's bodies
 * (approve → the TealAgentsResponse itself, or a HitlResponse when it pauses again; reject of every
 * pending call → RejectedToolResponse). Requests are sent as upstream's clients send them. Our
 * additions are allowed only where named below (and documented in docs/api.md). Only the model
 * vendor is fake.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { openSse, parseSse, SseEvent } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import {
  Extras,
  FunctionCallContent,
  HitlResponse,
  mismatches,
  Model,
  RejectedToolResponse,
  SSE_EVENTS,
  StateResponse,
  TealAgentsPartialResponse,
  TealAgentsResponse,
} from '../support/upstream-v3-models';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Compat
version: 1
description: Upstream shapes
spec:
  governance:
    autonomy_level: L3
    tools:
      Files-wipe: {requires_hitl: true}
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Files]
`;
const PLUGIN = `
const path = { type: 'object', properties: { path: { type: 'string' } } };
exports.plugins = [{ name: 'Files', tools: [
  { name: 'read', description: 'Reads a file', parameters: path, risk: 'read_only', handler: ({ path }) => 'content of ' + path },
  { name: 'wipe', description: 'Deletes a file', parameters: path, handler: ({ path }) => 'wiped ' + path },
] }];
`;

/** Our additions (docs/api.md): a pause's id, plan and autonomy level; each pending call's risk and why it waits. */
const HITL_EXTRAS: Extras = { HitlResponse: ['pause_id', 'plan', 'plan_id', 'autonomy_level', 'expires_at'], FunctionCallContent: ['risk', 'approval_reason'] };
/** Event names we send besides upstream's (docs/api.md, Streaming). */
const OUR_EVENTS = ['tool-call', 'tool-result', 'approval-required', 'approved', 'rejected', 'cancelled', 'queued', 'error'];
/** Upstream mints ids as `str(uuid4())`. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const wipe = (id: string, path: string) => ({ id, name: 'Files-wipe', arguments: JSON.stringify({ path }) });
/** Upstream's `UserMessage`, as pydantic's model_dump sends it: every field, nulls included. */
const userMessage = (content: string, ids: { task_id?: string; session_id?: string } = {}) => ({
  task_id: ids.task_id ?? null,
  session_id: ids.session_id ?? null,
  items: [{ content_type: 'text', content }],
  user_context: null,
});

function expectShape(value: unknown, model: Model, extras: Extras = {}): void {
  expect(mismatches(value, model, extras)).toEqual([]);
}

describe('upstream tealagents/v1alpha1 wire shapes', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let base: string;
  const resume = (requestId: string, body: unknown) => postJson(`${base}/tealagents/v1alpha1/resume/${requestId}`, body);

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({ 'compat.yaml': AGENT });
    writeFileSync(join(dir, 'custom_plugins.js'), PLUGIN);
    t = await startTestApp({ configPath: dir, env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' } });
    base = `${t.url}/Compat/1`;
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.discard()).toBe(0));

  async function paused(path = 'a') {
    llm.script(reply.toolCalls([wipe('call_w', path)]));
    const res = await postJson(base, userMessage(`wipe ${path}`));
    expect([res.status, res.body.status]).toEqual([200, 'Paused']);
    return res.body;
  }

  it('POST: StateResponse (Completed) whose content is exactly a TealAgentsResponse; ids as upstream mints them', async () => {
    llm.script(reply.text('Hello.', { usage: { prompt_tokens: 7, completion_tokens: 2 } }));
    const res = await postJson(base, userMessage('hi'));
    expect(res.status).toBe(200);
    expectShape(res.body, StateResponse);
    expectShape(res.body.content, TealAgentsResponse);
    const { session_id, task_id, request_id } = res.body;
    expect([session_id, task_id, request_id].every((id) => UUID.test(id))).toBe(true);
    expect(res.body).toEqual({
      session_id,
      task_id,
      request_id,
      status: 'Completed',
      content: {
        task_id,
        session_id,
        request_id,
        output: 'Hello.',
        source: 'Compat:1',
        token_usage: { completion_tokens: 2, prompt_tokens: 7, total_tokens: 9 },
        extra_data: null,
      },
    });
  });

  it('POST: a task_id and a session_id the caller names come back as given (any id, not only UUIDs)', async () => {
    llm.script(reply.text('one'), reply.text('two'));
    const first = await postJson(base, userMessage('one', { task_id: 'orchestrator-task:7', session_id: 'chat.session_42' }));
    expectShape(first.body, StateResponse);
    expect(first.body).toMatchObject({
      task_id: 'orchestrator-task:7',
      session_id: 'chat.session_42',
      content: { task_id: 'orchestrator-task:7', session_id: 'chat.session_42' },
    });
    const second = await postJson(base, userMessage('two', { task_id: 'orchestrator-task:7' }));
    expectShape(second.body, StateResponse);
    expect(second.body).toMatchObject({ task_id: 'orchestrator-task:7', session_id: 'chat.session_42', content: { output: 'two' } });
  });

  it('POST: a pause is StateResponse (Paused) with a HitlResponse whose tool_calls are FunctionCallContent dumps', async () => {
    const body = await paused();
    expectShape(body, StateResponse, HITL_EXTRAS);
    expectShape(body.content, HitlResponse, HITL_EXTRAS);
    const { task_id, session_id, request_id } = body;
    expect(body.content).toMatchObject({ task_id, session_id, request_id, message: 'Human intervention required.' });
    expect(body.content.approval_url).toContain(`/tealagents/v1alpha1/resume/${request_id}?action=approve`);
    expect(body.content.rejection_url).toContain(`/tealagents/v1alpha1/resume/${request_id}?action=reject`);
    expect(body.content.tool_calls).toEqual([
      {
        inner_content: null,
        ai_model_id: null,
        metadata: {},
        content_type: 'function_call',
        id: 'call_w',
        index: 0,
        name: 'Files-wipe',
        function_name: 'wipe',
        plugin_name: 'Files',
        arguments: '{"path":"a"}',
        risk: 'write_high_risk',
        approval_reason: 'requires_hitl',
      },
    ]);
    // GET /tasks/{id} lists the same calls in the same shape
    const task = await request(`${base}/tasks/${task_id}`);
    expectShape(task.body.pending_approvals[0].tool_calls[0], FunctionCallContent, HITL_EXTRAS);
    await resume(request_id, { action: 'reject' });
  });

  it('resume with upstream’s ResumeRequest {action: "approve"}: the TealAgentsResponse itself (plus our status)', async () => {
    const body = await paused();
    llm.script(reply.text('Wiped a.'));
    const res = await resume(body.request_id, { action: 'approve' });
    expect(res.status).toBe(200);
    expectShape(res.body, TealAgentsResponse, { TealAgentsResponse: ['status'] });
    expect(res.body).toMatchObject({
      task_id: body.task_id,
      session_id: body.session_id,
      request_id: body.request_id,
      output: 'Wiped a.',
      source: 'Compat:1',
      status: 'Completed',
    });
  });

  it('resume approve that pauses again: a HitlResponse (plus our status and a new pause_id)', async () => {
    const body = await paused();
    llm.script(reply.toolCalls([wipe('call_x', 'b')]));
    const res = await resume(body.request_id, { action: 'approve' });
    expectShape(res.body, HitlResponse, { HitlResponse: ['status', ...HITL_EXTRAS.HitlResponse!], FunctionCallContent: HITL_EXTRAS.FunctionCallContent });
    expect(res.body).toMatchObject({
      request_id: body.request_id,
      message: 'Human intervention required.',
      status: 'Paused',
      tool_calls: [{ id: 'call_x', arguments: '{"path":"b"}' }],
    });
    expect(res.body.pause_id).not.toBe(body.content.pause_id);
    await resume(body.request_id, { action: 'reject' });
  });

  it('resume reject of every pending call: RejectedToolResponse (plus our status and reason); request and task Canceled, no model call', async () => {
    const body = await paused();
    const calls = llm.requests.length;
    const res = await resume(body.request_id, { action: 'reject' });
    expect(res.status).toBe(200);
    expectShape(res.body, RejectedToolResponse, { RejectedToolResponse: ['status', 'reason'] });
    expect(res.body).toEqual({
      task_id: body.task_id,
      session_id: body.session_id,
      request_id: body.request_id,
      message: 'Tool excecution rejected.', // upstream's default, typo and all
      status: 'Canceled',
      reason: 'rejected',
    });
    expect(llm.requests).toHaveLength(calls);
    const task = await request(`${base}/tasks/${body.task_id}`);
    expect(task.body).toMatchObject({ status: 'Canceled', requests: [{ status: 'Canceled', reason: 'rejected' }] });
  });

  it('SSE: well-formed frames; partial-response is exactly a TealAgentsPartialResponse (with source); final-response a StateResponse', async () => {
    llm.script(reply.chunks(['Hel', 'lo', '!']));
    const s = await openSse(`${base}/sse`, userMessage('hi'));
    const events = frames(await s.readAll());
    expect(events.map((e) => e.event)).toEqual(['partial-response', 'partial-response', 'partial-response', 'final-response']);
    const final = JSON.parse(events.at(-1)!.data);
    expectShape(final, StateResponse);
    expectShape(final.content, TealAgentsResponse);
    const partials = events.slice(0, -1).map((e) => JSON.parse(e.data));
    for (const p of partials) {
      expectShape(p, TealAgentsPartialResponse);
      expect(p).toMatchObject({ task_id: final.task_id, session_id: final.session_id, request_id: final.request_id, source: 'Compat:1' });
    }
    expect(partials.map((p) => p.output_partial).join('')).toBe(final.content.output);
  });

  it('SSE: a pause sends approval-required (the HitlResponse), then final-response (StateResponse, Paused); the resume stream ends with a StateResponse', async () => {
    llm.script(reply.toolCalls([wipe('call_s', 'c')]));
    const s = await openSse(`${base}/sse`, userMessage('wipe c'));
    const events = frames(await s.readAll());
    expect(events.map((e) => e.event)).toEqual(['approval-required', 'final-response']);
    const final = JSON.parse(events[1]!.data);
    expectShape(final, StateResponse, HITL_EXTRAS);
    expectShape(JSON.parse(events[0]!.data), HitlResponse, HITL_EXTRAS);
    expect(final.status).toBe('Paused');

    llm.script(reply.chunks(['Wiped ', 'c.']));
    const r = await openSse(`${base}/tealagents/v1alpha1/resume/${final.request_id}/sse`, { action: 'approve' });
    const resumed = frames(await r.readAll());
    const last = JSON.parse(resumed.at(-1)!.data);
    expect(resumed.at(-1)!.event).toBe('final-response');
    expectShape(last, StateResponse);
    expect(last).toMatchObject({ status: 'Completed', content: { output: 'Wiped c.' } });
    for (const p of resumed.filter((e) => e.event === 'partial-response')) expectShape(JSON.parse(p.data), TealAgentsPartialResponse);
  });
});

/**
 * The events of a raw v3 stream, each checked to be one well-formed frame (`id:` then `event:`
 * then one `data:` line of JSON, as upstream's `event: NAME\ndata: JSON\n\n` plus our id) whose
 * name is upstream's or one of ours. Keepalive comments are dropped.
 */
function frames(raw: string): SseEvent[] {
  const blocks = raw.split('\n\n').filter((b) => b && !b.startsWith(':'));
  for (const b of blocks) expect(b).toMatch(/^id: \d+-\d+\nevent: [a-z-]+\ndata: \{.*\}$/);
  const events = parseSse(raw).filter((e) => !e.comment);
  for (const e of events) expect([...SSE_EVENTS, ...OUR_EVENTS]).toContain(e.event);
  return events;
}
