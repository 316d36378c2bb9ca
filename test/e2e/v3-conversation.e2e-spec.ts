import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { TestApp } from '../support/test-app';
import { postJson } from '../support/http';
import { modelInput, v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Helper
version: 1
description: Stateful agent on a fake OpenAI-compatible server
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: You are terse.
    temperature: 0
`;

describe('v3 conversations against an OpenAI-compatible model', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;

  let app: FakeModelApp;

  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'helper.yaml': AGENT } });
    ({ llm, t } = app);
    api = v3Client(`${t.url}/Helper/1`);
  });
  afterAll(() => app.close());

  it('sends the model the system prompt, the user context and the whole history on a follow-on', async () => {
    llm.script(reply.text('Hi Ada.'), reply.text('You said hello.'));
    const first = await api.say('hello', { user_context: { name: 'Ada' } });
    expect(first.status).toBe(200);
    const second = await api.say('what did I say?', { task_id: first.body.task_id });
    expect(second.status).toBe(200);
    expect(second.body.content.output).toBe('You said hello.');

    const seen = llm.requests.slice(-2).map((r) => r.body);
    expect(modelInput(seen[0])).toEqual([
      ['system', 'You are terse.'],
      ['user', 'The following user context was provided:\n  name: Ada\n'],
      ['user', 'hello'],
    ]);
    expect(modelInput(seen[1])).toEqual([
      ['system', 'You are terse.'],
      ['user', 'The following user context was provided:\n  name: Ada\n'],
      ['user', 'hello'],
      ['assistant', 'Hi Ada.'],
      ['user', 'what did I say?'],
    ]);
    expect(seen[1].temperature).toBe(0);
  });

  it('answers 409 to a follow-on while a request of the task is running, then accepts it', async () => {
    llm.script(reply.text('first'));
    const first = await api.say('start');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    llm.script(reply.text('slow answer', { until: held }));
    const slow = api.say('slow one', { task_id: first.body.task_id });
    await llm.waitForRequest(llm.requests.length); // the slow request reached the model

    const busy = await api.say('meanwhile', { task_id: first.body.task_id });
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('TASK_BUSY');
    expect(busy.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    release();
    expect((await slow).status).toBe(200);
    llm.script(reply.text('after'));
    expect((await api.say('after', { task_id: first.body.task_id })).status).toBe(200);
    const task = await api.task(first.body.task_id);
    expect(task.body.requests.map((r: { output: string }) => r.output)).toEqual(['first', 'slow answer', 'after']);
  });

  it('with many concurrent follow-ons, each succeeds whole or gets 409, and the history is exactly the winners in order', async () => {
    llm.script(reply.text('base'));
    const first = await api.say('base');
    const taskId = first.body.task_id;
    const N = 12;
    for (let i = 0; i < N; i++) llm.script(reply.text(`answer ${i}`, { delayMs: 30 }));
    const results = await Promise.all(Array.from({ length: N }, (_, i) => api.say(`question ${i}`, { task_id: taskId })));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const winners = results.filter((r) => r.status === 200);
    expect(winners.length).toBeGreaterThanOrEqual(1);

    const task = await api.task(taskId);
    const stored = task.body.requests.slice(1);
    expect(stored.map((r: { request_id: string }) => r.request_id)).toEqual(winners.map((w) => w.body.request_id));
    for (const r of stored) {
      expect(r.status).toBe('Completed');
      expect(r.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    }
    // drain the replies the losers never used, so later tests start from a clean queue
    while (llm.pending() > 0) await api.say('drain');
  });

  it('marks a request Failed when the model fails mid-request, keeps the history consistent, and the next follow-on works', async () => {
    llm.script(reply.text('fine'));
    const first = await api.say('one');
    llm.script(reply.error(500));
    const failed = await api.say('two', { task_id: first.body.task_id });
    expect(failed.status).toBe(502);
    expect(failed.body.code).toBe('LLM_UNAVAILABLE');

    let task = await api.task(first.body.task_id);
    expect(task.body.status).toBe('Failed');
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Failed']);
    expect(task.body.requests[1].error.code).toBe('LLM_UNAVAILABLE');
    expect(task.body.running_request_id).toBeNull();

    llm.script(reply.text('recovered'));
    const third = await api.say('three', { task_id: first.body.task_id });
    expect(third.status).toBe(200);
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'You are terse.'],
      ['user', 'one'],
      ['assistant', 'fine'],
      ['user', 'three'],
    ]);
    task = await api.task(first.body.task_id);
    expect(task.body.status).toBe('Completed');
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Failed', 'Completed']);
  });

  it('cancels a running request: its model call is aborted, the caller gets Canceled, and the task moves on', async () => {
    llm.script(reply.text('ready'));
    const first = await api.say('begin');
    const taskId = first.body.task_id;
    llm.script(reply.hang());
    const pending = api.say('this will be canceled', { task_id: taskId });
    const modelCall = await llm.waitForRequest(llm.requests.length);

    const otherUser = await postJson(`${t.url}/Helper/1/tasks/${taskId}/cancel`, {}, { 'x-dev-user': 'mallory' });
    expect(otherUser.status).toBe(401);

    const cancel = await postJson(`${t.url}/Helper/1/tasks/${taskId}/cancel`, {});
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ task_id: taskId, status: 'Canceled' });
    await modelCall.disconnected; // the model call was aborted, not left running

    const canceled = await pending;
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('Canceled');
    const task = await api.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Canceled']);
    expect(task.body.running_request_id).toBeNull();

    const nothing = await postJson(`${t.url}/Helper/1/tasks/${taskId}/cancel`, {});
    expect(nothing.status).toBe(409);
    expect(nothing.body.code).toBe('TASK_NOT_RUNNING');
    llm.script(reply.text('next'));
    expect((await api.say('next', { task_id: taskId })).status).toBe(200);
  });

  it('resume: 404 for an unknown request, 401 for another user, 409 when not paused, 422 for a bad action', async () => {
    llm.script(reply.text('done'));
    const first = await api.say('x');
    const resume = (id: string, body: unknown, headers?: Record<string, string>) =>
      postJson(`${t.url}/Helper/1/tealagents/v1alpha1/resume/${id}`, body, headers);
    expect((await resume('8a1b2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d', { action: 'approve' })).status).toBe(404);
    expect((await resume(first.body.request_id, { action: 'approve' }, { 'x-dev-user': 'mallory' })).status).toBe(401);
    const notPaused = await resume(first.body.request_id, { action: 'approve' });
    expect(notPaused.status).toBe(409);
    expect(notPaused.body.code).toBe('TASK_NOT_PAUSED');
    const bad = await resume(first.body.request_id, { action: 'maybe' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe('action');
  });
});
