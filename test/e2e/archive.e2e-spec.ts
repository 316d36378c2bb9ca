/**
 * The audit archive (issue 23, docs/archive.md) end to end: a real server with TA_ARCHIVE_URL on the
 * run's PostgreSQL, a conversation whose plans are approved, rejected and left to expire, then the
 * archive's rows (each event once, in order), the plans, the timeline after a deletion, and who may
 * read them. Only the model vendor is fake.
 */
import { Client } from 'pg';
import { agUiAgent, runOnce } from '../support/ag-ui-client';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { postJson, request } from '../support/http';
import { testPostgresUrl, uniqueSchema } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { APPROVAL_TTL_S, archiveAgentDir } from '../support/archive-conversation';

const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
type Event = { event_id: string; type: string; request_id: string | null; payload: Record<string, unknown>; archived_at: string | null; owner_id: string };

describe('the audit archive', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let db: Client;
  const schema = uniqueSchema('archive_e2e');
  const say = (text: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    postJson(`${t.url}/Planner/1`, { items: [{ content_type: 'text', content: text }], ...extra }, headers);
  const resume = (requestId: string, body: unknown) => postJson(`${t.url}/Planner/1/tealagents/v1alpha1/resume/${requestId}`, body);
  const get = (path: string, headers: Record<string, string> = {}) => request(`${t.url}${path}`, { headers });
  const stored = async (taskId: string) =>
    (await db.query<{ event_id: string; type: string }>(`SELECT event_id, type FROM ${schema}.events WHERE task_id = $1`, [taskId])).rows;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    // The Planner of the archive's other tests: L1, on_paused: refine, a short approval TTL.
    const dir = archiveAgentDir();
    const env = {
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_ARCHIVE_URL: testPostgresUrl(),
      TA_ARCHIVE_SCHEMA: schema,
      TA_METRICS_PROMETHEUS: 'true',
    };
    t = await startTestApp({ configPath: dir, env });
    db = new Client({ connectionString: testPostgresUrl() });
    await db.connect();
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
    await db?.end();
  });

  it('archives a plan approved, one rejected, one refined and one expired: each event once, in order; the plans; the timeline after deletion', async () => {
    // 1. A plan of three calls (plan_threshold 3), approved: read and edit run, wipe fails.
    llm.script(
      reply.toolCalls([tc('a1', 'Notes-read', { id: 'x' }), tc('a2', 'Notes-edit', { id: 'x' }), tc('a3', 'Notes-wipe', { id: 'x' })]),
      reply.text('done, mostly'),
    );
    const first = await say('tidy note x');
    expect(first.body.status).toBe('Paused');
    const taskId: string = first.body.task_id;
    const approved = await resume(first.body.request_id, { action: 'approve' });
    expect(approved.body.status).toBe('Completed');

    // 2. A single risky call, rejected.
    llm.script(reply.toolCalls([tc('b1', 'Notes-wipe', { id: 'y' })]));
    const second = await say('wipe y', { task_id: taskId });
    expect(second.body.status).toBe('Paused');
    expect((await resume(second.body.request_id, { action: 'reject', reason: 'keep y' })).status).toBe(200);

    // 3. Another, refined: a new message while it waits (on_paused: refine) rejects it as refined,
    //    and the model plans again in the same request, from the message.
    llm.script(reply.toolCalls([tc('d1', 'Notes-wipe', { id: 'w' })]), reply.toolCalls([tc('d2', 'Notes-read', { id: 'w' })]), reply.text('read w instead'));
    const fourth = await say('wipe w', { task_id: taskId });
    expect(fourth.body.status).toBe('Paused');
    const refined = await say('no, only read w', { task_id: taskId });
    expect(refined.status).toBe(200);
    expect(refined.body).toMatchObject({ status: 'Completed', request_id: fourth.body.request_id, content: { output: 'read w instead' } });
    const replanned = llm.requests.at(-2)!.body.messages as { role: string; content: unknown }[];
    expect(replanned.slice(-3).map((m) => m.role)).toEqual(['assistant', 'tool', 'user']);
    expect(String(replanned.at(-2)!.content)).toMatch(/refined the plan: "no, only read w"/);

    // 4. Another, left to expire (APPROVAL_TTL_S): the next read expires it.
    llm.script(reply.toolCalls([tc('c1', 'Notes-wipe', { id: 'z' })]));
    const third = await say('wipe z', { task_id: taskId });
    expect(third.body.status).toBe('Paused');
    await new Promise((r) => setTimeout(r, APPROVAL_TTL_S * 1000 + 200));
    expect((await get(`/Planner/1/tasks/${taskId}`)).body.status).toBe('Canceled');

    const expected = [
      ...['request_accepted', 'model_call', 'plan_proposed', 'decision'],
      ...['tool_call_started', 'tool_call_started', 'tool_call_started', 'tool_call_completed', 'tool_call_completed', 'tool_call_failed'],
      ...['model_call', 'request_completed'],
      ...['request_accepted', 'model_call', 'plan_proposed', 'decision', 'request_canceled'],
      ...[
        'request_accepted',
        'model_call',
        'plan_proposed',
        'plan_refined',
        'model_call',
        'tool_call_started',
        'tool_call_completed',
        'model_call',
        'request_completed',
      ],
      ...['request_accepted', 'model_call', 'plan_proposed', 'approval_expired', 'request_canceled'],
    ];
    // The archive catches up within moments (the queue drains after each commit), each event once.
    await waitFor(async () => expect(await stored(taskId)).toHaveLength(expected.length));
    const rows = await stored(taskId);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);

    const timeline = await get(`/Planner/1/tasks/${taskId}/events`);
    expect(timeline.status).toBe(200);
    const events = timeline.body.events as Event[];
    expect(events.map((e) => e.type)).toEqual(expected);
    expect(events.find((e) => e.type === 'tool_call_failed')!.payload).toMatchObject({ name: 'Notes-wipe', outcome: 'error' });
    expect(events.find((e) => e.type === 'decision' && e.payload.action === 'reject')!.payload).toMatchObject({ reason: 'keep y', decided_by: 'dev-user' });

    const plans = await get(`/Planner/1/tasks/${taskId}/plans`);
    expect(plans.status).toBe(200);
    expect(plans.body.plans.map((p: { status: string; plan: boolean }) => [p.status, p.plan])).toEqual([
      ['completed', true],
      ['rejected', false],
      ['refined', false],
      ['expired', false],
    ]);
    expect(plans.body.plans[2]).toMatchObject({ reason: 'no, only read w', decided_by: 'dev-user' });
    const [done] = plans.body.plans;
    expect(done).toMatchObject({ max_risk: 'write_high_risk', decided_by: 'dev-user' });
    expect(Date.parse(done.approved_at)).toBeLessThanOrEqual(Date.parse(done.executed_at));
    expect(done.duration_ms).toBeGreaterThanOrEqual(0);

    // Another user of the tenant reads nothing of it; an auditor reads it all.
    expect((await get(`/Planner/1/tasks/${taskId}/events`, { 'x-dev-user': 'mallory' })).status).toBe(404);
    expect((await get(`/audit/events?task_id=${taskId}`, { 'x-dev-user': 'mallory' })).body.events).toEqual([]);
    expect((await get(`/audit/events?oid=dev-user`, { 'x-dev-user': 'mallory' })).status).toBe(403);
    const audited = await get(`/audit/events?task_id=${taskId}&limit=5`, { 'x-dev-user': 'mallory', 'x-dev-roles': 'Agents.Audit' });
    expect(audited.body.events).toHaveLength(5);
    expect(audited.body.next_cursor).toEqual(expect.any(String));

    // Deleted: gone from the live store, kept in the archive (marked archived), timeline and plans still there.
    expect((await request(`${t.url}/Planner/1/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await get(`/Planner/1/tasks/${taskId}`)).status).toBe(404);
    const after = await get(`/Planner/1/tasks/${taskId}/events`);
    expect(after.status).toBe(200);
    const kept = after.body.events as Event[];
    expect(kept.map((e) => e.type)).toEqual([...expected, 'task_deleted']);
    expect(kept.every((e) => e.archived_at !== null)).toBe(true);
    expect((await get(`/Planner/1/tasks/${taskId}/plans`)).body.plans.map((p: { status: string }) => p.status)).toEqual([
      'completed',
      'rejected',
      'refined',
      'expired',
    ]);
    expect((await get(`/Planner/1/tasks/${taskId}/events`, { 'x-dev-user': 'mallory' })).status).toBe(404);
    expect((await get(`/Planner/1/tasks/${taskId}/events`, { 'x-dev-user': 'mallory', 'x-dev-roles': 'Agents.Audit' })).status).toBe(200);
  }, 30_000); // it waits out a pause of APPROVAL_TTL_S (4 s) on top of ten turns: past Jest's 5 s default on a busy machine

  it('exports the caller events as NDJSON, one JSON object a line', async () => {
    llm.script(reply.text('hello'));
    const res = await say('hi');
    await waitFor(async () => expect(await stored(res.body.task_id)).toHaveLength(3));
    const out = await fetch(`${t.url}/audit/events?task_id=${res.body.task_id}`, { headers: { accept: 'application/x-ndjson' } });
    expect(out.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = (await out.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Event);
    expect(lines.map((e) => e.type)).toEqual(['request_accepted', 'model_call', 'request_completed']);
  });

  it('refines over AG-UI: a user message while an interrupt is open plans again in the same run', async () => {
    llm.script(reply.toolCalls([tc('g1', 'Notes-wipe', { id: 'q' })], { text: 'On it.' }));
    const first = agUiAgent(`${t.url}/Planner/1/ag-ui`);
    const paused = await runOnce(first, { say: 'wipe q' });
    expect(paused.error).toBeUndefined();
    expect(paused.types).toContain('RUN_FINISHED');
    // The official client will not run past an open interrupt itself; a second client of the thread does not know of it.
    llm.script(reply.text('kept q, as you asked'));
    const other = agUiAgent(`${t.url}/Planner/1/ag-ui`, { threadId: first.threadId });
    const refined = await runOnce(other, { say: 'keep q' });
    expect(refined.error).toBeUndefined();
    expect(refined.types).not.toContain('RUN_ERROR');
    expect(JSON.stringify(refined.events)).toContain('kept q, as you asked');
    const plans = await get(`/Planner/1/tasks/${first.threadId}/plans`);
    expect(plans.body.plans).toMatchObject([{ status: 'refined', reason: 'keep q' }]);
  });

  it('reports its queue, lag, drops and failures as metrics', async () => {
    const { text } = await get('/metrics');
    expect(text).toMatch(/^ta_archive_queue(\{[^}]*\})? \d+$/m);
    expect(text).toMatch(/^ta_archive_lag_seconds(\{[^}]*\})? [\d.e-]+$/m);
    expect(text).toMatch(/^ta_archive_dropped_total(\{[^}]*\})? 0$/m);
    expect(text).toMatch(/^ta_archive_failures_total(\{[^}]*\})? 0$/m);
  });

  it('refuses a bad query with the field named', async () => {
    const res = await get('/audit/events?since=yesterday');
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'since' })]);
    expect((await get('/audit/events?type=nope')).body.errors).toEqual([expect.objectContaining({ field: 'type' })]);
    expect((await get('/audit/events?cursor=abc')).status).toBe(422);
  });
});
