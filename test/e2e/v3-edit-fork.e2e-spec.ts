/**
 * Edit and rerun, and fork (docs/api.md, Edit and fork), on every backend; on Redis and DynamoDB
 * over two app instances sharing the store (two replicas), and across a restart. Only the model
 * vendor is fake; its recorded requests show the model input message by message. Invariants: an
 * edit reruns from the state before the edited request, the turns it replaced never reach the model
 * again but stay readable (`?include=superseded`); an edit racing a follow-on has exactly one
 * winner; a paused task refuses edits; a fork copies the history and then lives on its own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { modelInput, text, v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Editor
version: 1
description: Edit and fork e2e
spec:
  governance:
    autonomy_level: L1
    tools:
      Notes-peek: {requires_hitl: true}
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Notes]
`;
const PLUGIN = `
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'peek', description: 'Reads a secret note', parameters: { type: 'object', properties: {}, additionalProperties: false }, risk: 'read_only', handler: () => 'secret' },
] }];
`;

interface Backend {
  name: string;
  /** A fresh store instance on the shared backend (each app gets its own, as separate processes); none: in memory, one app. */
  setup(): Promise<(() => StateStore) | undefined>;
}

const backends: Backend[] = [
  { name: 'memory', setup: async () => undefined },
  {
    name: 'redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('v3-edit')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix });
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('v3-edit');
      await createTestStateTable(table);
      return () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    },
  },
  {
    name: 'postgres',
    setup: async () => (await postgresStores('v3_edit')).store,
  },
];

type Req = { request_id: string; status: string; output: string | null; edit_of: string | null; superseded_by: string | null };

describe.each(backends)('edit and fork on $name', ({ name, setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  let newStore: (() => StateStore) | undefined;
  let dir: string;
  const env = () => ({ TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_STATE_STORE: 'memory' });
  const start = () => startTestApp({ configPath: dir, env: env(), store: newStore?.() });
  /** Calls go to replica A or B alternately where the store is shared (both A on memory). */
  const api = (app: TestApp) => v3Client(`${app.url}/Editor/1`);
  const editUrl = (app: TestApp, taskId: string, requestId: string) => `${app.url}/Editor/1/tasks/${taskId}/requests/${requestId}/edit`;
  const edit = (app: TestApp, taskId: string, requestId: string, content: string, headers?: Record<string, string>) =>
    postJson(editUrl(app, taskId, requestId), { items: [text(content)] }, headers);
  const fork = (app: TestApp, taskId: string, body: Record<string, unknown> = {}, headers?: Record<string, string>) =>
    postJson(`${app.url}/Editor/1/tasks/${taskId}/fork`, body, headers);
  const view = async (app: TestApp, taskId: string, include = false) => {
    const res = await request(`${app.url}/Editor/1/tasks/${taskId}${include ? '?include=superseded' : ''}`);
    expect(res.status).toBe(200);
    return res.body as { task_id: string; session_id: string; status: string; metadata: Record<string, string>; requests: Req[] };
  };
  const lastInput = () => modelInput(llm.requests[llm.requests.length - 1]!.body);

  /** A task of three completed turns q0..q2 answered a0..a2, over both replicas. */
  async function threeTurns(): Promise<{ taskId: string; ids: string[] }> {
    llm.script(reply.text('a0'), reply.text('a1'), reply.text('a2'));
    const first = await api(a).say('q0');
    const second = await api(b).say('q1', { task_id: first.body.task_id });
    const third = await api(a).say('q2', { task_id: first.body.task_id });
    for (const r of [first, second, third]) expect(r.body.status).toBe('Completed');
    return { taskId: first.body.task_id, ids: [first, second, third].map((r) => r.body.request_id) };
  }

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    newStore = await setup();
    dir = writeAgentDir({ 'editor.yaml': AGENT });
    writeFileSync(join(dir, 'custom_plugins.js'), PLUGIN);
    a = await start();
    b = newStore ? await start() : a;
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    if (b !== a) await b?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.discard()).toBe(0));

  it('edits the last, a middle and the first request: each reruns from the state before it; the replaced turns are hidden from the model', async () => {
    const { taskId, ids } = await threeTurns();

    llm.script(reply.text('a2 edited'));
    const last = await edit(b, taskId, ids[2]!, 'q2 edited');
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ task_id: taskId, status: 'Completed', content: { output: 'a2 edited' } });
    expect(ids).not.toContain(last.body.request_id);
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0'],
      ['assistant', 'a0'],
      ['user', 'q1'],
      ['assistant', 'a1'],
      ['user', 'q2 edited'],
    ]);

    llm.script(reply.text('a1 edited'));
    const middle = await edit(a, taskId, ids[1]!, 'q1 edited');
    expect(middle.body).toMatchObject({ status: 'Completed', content: { output: 'a1 edited' } });
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0'],
      ['assistant', 'a0'],
      ['user', 'q1 edited'],
    ]);

    llm.script(reply.text('a0 edited'));
    const firstEdit = await edit(b, taskId, ids[0]!, 'q0 edited');
    expect(firstEdit.body).toMatchObject({ status: 'Completed', content: { output: 'a0 edited' } });
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0 edited'],
    ]);

    // A follow-on continues from the edited turn only.
    llm.script(reply.text('a3'));
    const next = await api(a).say('q3', { task_id: taskId });
    expect(next.body.status).toBe('Completed');
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0 edited'],
      ['assistant', 'a0 edited'],
      ['user', 'q3'],
    ]);

    // GET hides superseded requests by default; ?include=superseded shows them, each marked.
    const shown = await view(b, taskId);
    expect(shown.status).toBe('Completed');
    expect(shown.requests.map((r) => [r.request_id, r.output, r.edit_of, r.superseded_by])).toEqual([
      [firstEdit.body.request_id, 'a0 edited', ids[0], null],
      [next.body.request_id, 'a3', null, null],
    ]);
    const all = await view(a, taskId, true);
    expect(all.requests.map((r) => [r.request_id, r.output, r.superseded_by])).toEqual([
      [ids[0], 'a0', firstEdit.body.request_id],
      [ids[1], 'a1', middle.body.request_id],
      [ids[2], 'a2', last.body.request_id],
      [last.body.request_id, 'a2 edited', middle.body.request_id],
      [middle.body.request_id, 'a1 edited', firstEdit.body.request_id],
      [firstEdit.body.request_id, 'a0 edited', null],
      [next.body.request_id, 'a3', null],
    ]);

    // A superseded request cannot be edited again; its replacement can. Unknown request 404, another user 401.
    const stale = await edit(a, taskId, ids[1]!, 'again');
    expect([stale.status, stale.body.code]).toEqual([409, 'REQUEST_SUPERSEDED']);
    expect((await edit(a, taskId, '00000000-0000-4000-8000-000000000000', 'x')).body.code).toBe('REQUEST_NOT_FOUND');
    expect((await edit(a, taskId, ids[0]!, 'x', { 'x-dev-user': 'mallory' })).status).toBe(401);
    expect((await request(`${a.url}/Editor/1/tasks/${taskId}?include=everything`)).status).toBe(422);
  });

  it('an edit racing a follow-on: exactly one wins, the other is 409 TASK_BUSY', async () => {
    for (let round = 0; round < 3; round++) {
      llm.script(reply.text('base'));
      const first = await api(a).say('base');
      const taskId = first.body.task_id;
      llm.script(reply.text('winner', { delayMs: 300 }), reply.text('unused'));
      const [edited, followOn] = await Promise.all([edit(a, taskId, first.body.request_id, 'edited'), api(b).say('follow-on', { task_id: taskId })]);
      const statuses = [edited.status, followOn.status].sort();
      expect(statuses).toEqual([200, 409]);
      const loser = edited.status === 409 ? edited : followOn;
      expect(loser.body.code).toBe('TASK_BUSY');
      expect(llm.discard()).toBe(1);
      const shown = await view(b, taskId);
      if (edited.status === 200) {
        expect(shown.requests.map((r) => [r.request_id, r.output])).toEqual([[edited.body.request_id, 'winner']]);
        expect(lastInput()).toEqual([
          ['system', 'Be brief.'],
          ['user', 'edited'],
        ]);
      } else {
        expect(shown.requests.map((r) => [r.request_id, r.output])).toEqual([
          [first.body.request_id, 'base'],
          [followOn.body.request_id, 'winner'],
        ]);
        expect(lastInput()).toEqual([
          ['system', 'Be brief.'],
          ['user', 'base'],
          ['assistant', 'base'],
          ['user', 'follow-on'],
        ]);
      }
    }
  });

  it('refuses to edit while a request runs (TASK_BUSY) or the task is paused (TASK_PAUSED); after a cancel the edit runs', async () => {
    llm.script(reply.text('base'));
    const first = await api(a).say('base');
    const taskId = first.body.task_id;

    let release!: () => void;
    llm.script(reply.text('slow', { until: new Promise<void>((r) => (release = r)) }));
    const slow = api(a).say('slow', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);
    const busy = await edit(b, taskId, first.body.request_id, 'edited');
    expect([busy.status, busy.body.code]).toEqual([409, 'TASK_BUSY']);
    release();
    expect((await slow).body.status).toBe('Completed');

    llm.script(reply.toolCalls([{ id: 'c1', name: 'Notes-peek', arguments: '{}' }]));
    const paused = await api(b).say('peek', { task_id: taskId });
    expect(paused.body.status).toBe('Paused');
    for (const target of [paused.body.request_id, first.body.request_id]) {
      const refused = await edit(a, taskId, target, 'edited');
      expect([refused.status, refused.body.code]).toEqual([409, 'TASK_PAUSED']);
    }
    expect((await postJson(`${b.url}/Editor/1/tasks/${taskId}/cancel`, {})).status).toBe(200);

    llm.script(reply.text('after cancel'));
    const ok = await edit(a, taskId, paused.body.request_id, 'no peeking');
    expect(ok.body).toMatchObject({ status: 'Completed', content: { output: 'after cancel' } });
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'base'],
      ['assistant', 'base'],
      ['user', 'slow'],
      ['assistant', 'slow'],
      ['user', 'no peeking'],
    ]);
  });

  it('forks at a request and by default; both tasks then go on independently, the source untouched', async () => {
    const { taskId, ids } = await threeTurns();
    const before = await view(a, taskId, true);

    const atMiddle = await fork(b, taskId, { request_id: ids[1], session_id: 'another-session' });
    expect(atMiddle.status).toBe(201);
    expect(atMiddle.body).toMatchObject({
      session_id: 'another-session',
      status: 'Completed',
      metadata: { forked_from_task_id: taskId, forked_from_request_id: ids[1] },
    });
    expect(atMiddle.body.task_id).not.toBe(taskId);
    expect(atMiddle.body.requests.map((r: Req) => r.output)).toEqual(['a0', 'a1']);
    expect(atMiddle.body.requests.map((r: Req) => r.request_id)).not.toContain(ids[0]);

    const whole = await fork(a, taskId);
    expect(whole.status).toBe(201);
    expect(whole.body.session_id).toBe(before.session_id);
    expect(whole.body.requests.map((r: Req) => r.output)).toEqual(['a0', 'a1', 'a2']);
    expect(await view(b, taskId, true)).toEqual(before);

    llm.script(reply.text('fork answer'));
    const onFork = await api(a).say('fork q', { task_id: atMiddle.body.task_id });
    expect(onFork.body).toMatchObject({ status: 'Completed', session_id: 'another-session' });
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0'],
      ['assistant', 'a0'],
      ['user', 'q1'],
      ['assistant', 'a1'],
      ['user', 'fork q'],
    ]);

    llm.script(reply.text('source answer'));
    const onSource = await api(b).say('source q', { task_id: taskId });
    expect(onSource.body.status).toBe('Completed');
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0'],
      ['assistant', 'a0'],
      ['user', 'q1'],
      ['assistant', 'a1'],
      ['user', 'q2'],
      ['assistant', 'a2'],
      ['user', 'source q'],
    ]);

    // An edit on the fork leaves the source alone.
    llm.script(reply.text('fork edited'));
    const forkEdit = await edit(b, atMiddle.body.task_id, atMiddle.body.requests[1].request_id, 'q1 on the fork');
    expect(forkEdit.body.content.output).toBe('fork edited');
    expect((await view(a, atMiddle.body.task_id)).requests.map((r) => r.output)).toEqual(['a0', 'fork edited']);
    expect((await view(a, taskId)).requests.map((r) => r.output)).toEqual(['a0', 'a1', 'a2', 'source answer']);

    // Refusals: a request that did not complete or is unknown, another user's task (not found, as a read).
    expect((await fork(a, taskId, { request_id: '00000000-0000-4000-8000-000000000000' })).body.code).toBe('REQUEST_NOT_FOUND');
    expect((await fork(a, taskId, { request_id: 'nope' })).status).toBe(422);
    expect((await fork(a, taskId, {}, { 'x-dev-user': 'mallory' })).status).toBe(404);
  });

  it('streams an edit (POST .../edit/sse) as POST /sse does, under the new request id', async () => {
    const { taskId, ids } = await threeTurns();
    llm.script(reply.chunks(['stre', 'amed']));
    const sse = await openSse(`${editUrl(a, taskId, ids[1]!)}/sse`, { items: [text('q1 streamed')] });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await sse.readAll());
    const final = events.find((e) => e.event === 'final-response')!;
    const response = JSON.parse(final.data);
    expect(response).toMatchObject({ task_id: taskId, status: 'Completed', content: { output: 'streamed' } });
    expect(ids).not.toContain(response.request_id);
    const partials = events.filter((e) => e.event === 'partial-response').map((e) => JSON.parse(e.data));
    expect(partials.map((p) => p.output_partial).join('')).toBe('streamed');
    expect(partials.every((p) => p.request_id === response.request_id)).toBe(true);
    expect(lastInput()).toEqual([
      ['system', 'Be brief.'],
      ['user', 'q0'],
      ['assistant', 'a0'],
      ['user', 'q1 streamed'],
    ]);
    expect((await view(b, taskId)).requests.map((r) => r.output)).toEqual(['a0', 'streamed']);

    // Refusals come before the stream opens, as problem+json.
    const refused = await postJson(`${editUrl(a, taskId, ids[2]!)}/sse`, { items: [text('x')] });
    expect([refused.status, refused.body.code]).toEqual([409, 'REQUEST_SUPERSEDED']);
  });

  it('forks a task longer than one commit (55 requests; DynamoDB takes 49 a commit) whole', async () => {
    const N = 55;
    llm.script(...Array.from({ length: N }, (_, i) => reply.text(`a${i}`)));
    const first = await api(a).say('q0');
    const taskId = first.body.task_id;
    for (let i = 1; i < N; i++) expect((await api(i % 2 ? b : a).say(`q${i}`, { task_id: taskId })).body.status).toBe('Completed');
    const forked = await fork(b, taskId);
    expect(forked.status).toBe(201);
    const stored = await view(a, forked.body.task_id);
    expect(stored.requests.map((r) => r.output)).toEqual(Array.from({ length: N }, (_, i) => `a${i}`));
    expect(stored.requests.map((r: Req & { seq?: number }) => r.seq)).toEqual(Array.from({ length: N }, (_, i) => i));
    llm.script(reply.text('next'));
    expect((await api(b).say('next', { task_id: forked.body.task_id })).body.request_id).toEqual(expect.any(String));
    expect(lastInput()).toHaveLength(1 + 2 * N + 1);
    expect((await view(a, forked.body.task_id)).requests.at(-1)).toMatchObject({ output: 'next' });
  }, 60_000);

  if (name !== 'memory') {
    it('edits and forks survive a restart: a new instance reads and continues them', async () => {
      const { taskId, ids } = await threeTurns();
      llm.script(reply.text('a1 edited'));
      const edited = await edit(a, taskId, ids[1]!, 'q1 edited');
      const forked = await fork(b, taskId, { request_id: ids[2] });
      const before = [await view(a, taskId, true), await view(a, forked.body.task_id)];
      await a.close();
      a = await start();
      expect([await view(a, taskId, true), await view(a, forked.body.task_id)]).toEqual(before);
      llm.script(reply.text('after restart'), reply.text('fork after restart'));
      expect((await api(a).say('q2', { task_id: taskId })).body.status).toBe('Completed');
      expect(lastInput()).toEqual([
        ['system', 'Be brief.'],
        ['user', 'q0'],
        ['assistant', 'a0'],
        ['user', 'q1 edited'],
        ['assistant', 'a1 edited'],
        ['user', 'q2'],
      ]);
      expect((await api(a).say('more', { task_id: forked.body.task_id })).body.status).toBe('Completed');
      expect(lastInput()).toEqual([
        ['system', 'Be brief.'],
        ['user', 'q0'],
        ['assistant', 'a0'],
        ['user', 'q1'],
        ['assistant', 'a1'],
        ['user', 'q2'],
        ['assistant', 'a2'],
        ['user', 'more'],
      ]);
      expect(edited.status).toBe(200);
    });
  }
});
