/**
 * `spec.concurrency.on_busy: enqueue` (CONFIG.md): a follow-on on a busy task is accepted (202 with
 * its request id) and runs when the running request ends; at most one waits per task, and a newer
 * one supersedes the waiting one, which then ends Canceled with the reason `superseded`, visible on
 * the task and in its stream.
 */
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { openSse, parseSse } from '../support/sse-reader';
import { TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { modelInput, text, v3Client } from '../support/v3-client';

const AGENT = v3Agent('Queue', { description: 'Agent that enqueues follow-ons', concurrency: { on_busy: 'enqueue' } });

describe('on_busy: enqueue', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;

  let app: FakeModelApp;

  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'queue.yaml': AGENT } });
    ({ llm, t } = app);
    api = v3Client(`${t.url}/Queue/1`);
  });
  afterAll(() => app.close());

  async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
    const deadline = Date.now() + 10_000;
    let v = await read();
    while (!ok(v) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      v = await read();
    }
    return v;
  }

  it('accepts a follow-on on a busy task with 202 and runs it after the running request, with that turn in its input', async () => {
    llm.script(reply.text('first'));
    const first = await api.say('one');
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('second', { until: new Promise<void>((r) => (release = r)) }), reply.text('third'));
    const running = api.say('two', { task_id: taskId });
    await llm.waitForRequest(1);

    const queued = await api.say('three', { task_id: taskId });
    expect(queued.status).toBe(202);
    expect(queued.body).toEqual({ task_id: taskId, session_id: first.body.session_id, request_id: expect.any(String), status: 'Queued' });

    release();
    expect((await running).body.content.output).toBe('second');
    const task = await until(
      () => api.task(taskId),
      (r) => r.body.requests.at(-1)?.status === 'Completed',
    );
    expect(task.body.requests.map((r: { status: string; output: string }) => [r.status, r.output])).toEqual([
      ['Completed', 'first'],
      ['Completed', 'second'],
      ['Completed', 'third'],
    ]);
    expect(task.body.requests[2].request_id).toBe(queued.body.request_id);
    expect(modelInput(llm.requests[2]!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'one'],
      ['assistant', 'first'],
      ['user', 'two'],
      ['assistant', 'second'],
      ['user', 'three'],
    ]);
  });

  it('runs a follow-on queued behind a request that fails with the earlier completed turns in its input (found by the soak)', async () => {
    llm.script(reply.text('first'));
    const first = await api.say('one');
    const taskId = first.body.task_id;
    let release!: () => void;
    // 400: a refusal the server does not retry, so the running request ends Failed.
    llm.script(reply.error(400, { until: new Promise<void>((r) => (release = r)) }), reply.text('third'));
    const before = llm.requests.length;
    const running = api.say('two', { task_id: taskId });
    await llm.waitForRequest(before);
    const queued = await api.say('three', { task_id: taskId });
    expect(queued.status).toBe(202);

    release();
    expect((await running).status).toBeGreaterThanOrEqual(400);
    const task = await until(
      () => api.task(taskId),
      (r) => r.body.requests.at(-1)?.status === 'Completed',
    );
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Failed', 'Completed']);
    // The failed request is not replayed; the completed one before it is.
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'one'],
      ['assistant', 'first'],
      ['user', 'three'],
    ]);
  });

  it('keeps one waiting request: a newer follow-on supersedes it, visibly on the task and in its stream', async () => {
    llm.script(reply.text('base'));
    const first = await api.say('base');
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('running', { until: new Promise<void>((r) => (release = r)) }), reply.text('newest answer'));
    const running = api.say('running', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);

    // The first waiting follow-on is streamed, so its stream must show that it was superseded.
    const olderStream = openSse(`${t.url}/Queue/1/sse`, { task_id: taskId, items: [text('older')] }).then((r) => r.readAll());
    await until(
      () => api.task(taskId),
      (r) => r.body.requests.some((x: { status: string }) => x.status === 'Queued'),
    );
    const newer = await api.say('newer', { task_id: taskId });
    expect(newer.status).toBe(202);

    const events = parseSse(await olderStream).filter((e) => !e.comment);
    expect(events.map((e) => e.event)).toEqual(['queued', 'cancelled', 'final-response']);
    expect(JSON.parse(events[1]!.data)).toMatchObject({ task_id: taskId, reason: 'superseded' });
    expect(JSON.parse(events[2]!.data)).toMatchObject({ status: 'Canceled' });

    release();
    await running;
    const task = await until(
      () => api.task(taskId),
      (r) => r.body.requests.at(-1)?.status === 'Completed',
    );
    expect(task.body.requests.map((r: { status: string; reason?: string }) => r.status)).toEqual(['Completed', 'Completed', 'Canceled', 'Completed']);
    expect(task.body.requests[3].request_id).toBe(newer.body.request_id);
    expect(task.body.requests[3].output).toBe('newest answer');
    // the superseded turn is not replayed to the model
    expect(modelInput(llm.requests.at(-1)!.body).map(([, c]) => c)).not.toContain('older');
  });
});
