import { postJson, request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Assistant
version: 0.1
description: Stateful test agent
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const text = (content: string) => ({ content_type: 'text', content });

describe('v3 tasks on the in-memory store', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'assistant.yaml': AGENT } });
    base = `${t.url}/Assistant/0.1`;
  });
  afterAll(() => t.close());

  it('creates session, task and request on a first message and returns a StateResponse', async () => {
    const res = await postJson(base, { items: [text('hello')] });
    expect(res.status).toBe(200);
    const { session_id, task_id, request_id } = res.body;
    expect([session_id, task_id, request_id].every((id: string) => UUID.test(id))).toBe(true);
    expect(res.body).toEqual({
      session_id,
      task_id,
      request_id,
      status: 'Completed',
      content: {
        task_id,
        session_id,
        request_id,
        output: 'hello',
        source: 'Assistant:0.1',
        token_usage: expect.objectContaining({ total_tokens: expect.any(Number) }),
        extra_data: null,
      },
    });
  });

  it('keeps the session_id it is given', async () => {
    const session = '6f1c2b0e-7a55-4f6a-9d1e-0b8f4b8f3c11';
    const res = await postJson(base, { session_id: session, items: [text('hi')] });
    expect(res.status).toBe(200);
    expect(res.body.session_id).toBe(session);
  });

  it('appends follow-ons to the task and shows the whole history in GET /tasks/{id}', async () => {
    const first = await postJson(base, { items: [text('one')], user_context: { city: 'Oslo' } });
    const { task_id, session_id } = first.body;
    const second = await postJson(base, { task_id, items: [text('two')] });
    expect(second.status).toBe(200);
    expect(second.body.task_id).toBe(task_id);
    expect(second.body.session_id).toBe(session_id);
    expect(second.body.request_id).not.toBe(first.body.request_id);

    const task = await request(`${base}/tasks/${task_id}`);
    expect(task.status).toBe(200);
    expect(task.body).toMatchObject({ task_id, session_id, agent: 'Assistant:0.1', status: 'Completed', version: 4 });
    expect(task.body.requests.map((r: { request_id: string }) => r.request_id)).toEqual([first.body.request_id, second.body.request_id]);
    const turns = task.body.requests.flatMap((r: { messages: { role: string; items?: { content: string }[]; content?: string }[] }) =>
      r.messages.map((m) => [m.role, m.items ? m.items[0]!.content : m.content]),
    );
    expect(turns).toEqual([
      ['user', 'one'],
      ['assistant', 'one'],
      ['user', 'two'],
      ['assistant', 'two'],
    ]);
    const ids = task.body.requests.flatMap((r: { messages: { id: string }[] }) => r.messages.map((m) => m.id));
    expect(new Set(ids).size).toBe(4);
    expect(task.body.requests[0].user_context).toEqual({ city: 'Oslo' });
  });

  it('answers 404 for an unknown task read and 422 for malformed ids or an empty message', async () => {
    expect((await request(`${base}/tasks/no-such-task`)).body.code).toBe('TASK_NOT_FOUND');
    const badId = await postJson(base, { task_id: 'has space', items: [text('x')] });
    expect(badId.status).toBe(422);
    expect(badId.body.errors).toEqual([{ field: 'task_id', message: expect.stringContaining('task_id must be 1 to 128 characters') }]);
    const empty = await postJson(base, { items: [] });
    expect(empty.status).toBe(422);
    expect(empty.body.errors[0].field).toBe('items');
    const badPath = await request(`${base}/tasks/${'x'.repeat(129)}`);
    expect([badPath.status, badPath.body.errors[0].field]).toEqual([422, 'task_id']);
  });

  it('refuses a follow-on by another user (401) and hides the task from them (404)', async () => {
    const first = await postJson(base, { items: [text('mine')] });
    const { task_id } = first.body;
    const other = await postJson(base, { task_id, items: [text('theirs')] }, { 'x-dev-user': 'mallory' });
    expect(other.status).toBe(401);
    expect(other.body.code).toBe('NOT_OWNER');
    const read = await request(`${base}/tasks/${task_id}`, { headers: { 'x-dev-user': 'mallory' } });
    expect(read.status).toBe(404);
    const task = await request(`${base}/tasks/${task_id}`);
    expect(task.body.requests).toHaveLength(1);
  });

  it('lists the caller’s tasks of a session, paged, and gives another user reusing the id nothing', async () => {
    const session = '2d9b6a1e-3c4f-4a5b-8c7d-9e0f1a2b3c4d';
    const ids: string[] = [];
    for (const word of ['a', 'b', 'c']) ids.push((await postJson(base, { session_id: session, items: [text(word)] })).body.task_id);
    const page1 = await request(`${base}/sessions/${session}?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual(ids.slice(0, 2));
    expect(page1.body.next_cursor).toEqual(expect.any(String));
    const page2 = await request(`${base}/sessions/${session}?limit=2&cursor=${page1.body.next_cursor}`);
    expect(page2.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual(ids.slice(2));
    expect(page2.body.next_cursor).toBeNull();

    const mallory = await request(`${base}/sessions/${session}`, { headers: { 'x-dev-user': 'mallory' } });
    expect(mallory.status).toBe(404);
    // mallory reusing the id starts her own, separate session
    const hers = await postJson(base, { session_id: session, items: [text('m')] }, { 'x-dev-user': 'mallory' });
    expect(hers.status).toBe(200);
    const hersList = await request(`${base}/sessions/${session}`, { headers: { 'x-dev-user': 'mallory' } });
    expect(hersList.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual([hers.body.task_id]);
  });

  it('streams a v3 invocation with event ids, task and request ids, ending with the StateResponse', async () => {
    const res = await fetch(`${base}/sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [text('streamed reply')] }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const raw = await res.text();
    const frames = raw.split('\n\n').filter(Boolean);
    const events = frames.map((f) => {
      const lines = f.split('\n');
      return {
        id: lines.find((l) => l.startsWith('id: '))?.slice(4),
        event: lines.find((l) => l.startsWith('event: '))?.slice(7),
        data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)),
      };
    });
    expect(events.map((e) => e.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
    expect(events.map((e) => e.id)).toEqual(['0-0', '0-1', '0-2']);
    const final = events[2]!.data;
    expect(final.status).toBe('Completed');
    expect(final.content.output).toBe('streamed reply');
    for (const e of events) {
      expect(e.data.task_id).toBe(final.task_id);
      expect(e.data.request_id).toBe(final.request_id);
    }
    expect(
      events
        .slice(0, 2)
        .map((e) => e.data.output_partial)
        .join(''),
    ).toBe('streamed reply');
  });
});
