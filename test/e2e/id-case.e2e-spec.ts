/**
 * One rule for the case of ids, at the edge: client ids (`session_id`, `task_id`) are kept exactly
 * as sent, in bodies and paths alike (case-sensitive, as upstream); server-minted UUIDs
 * (`request_id`, `pause_id`) are lower-case and read case-insensitively, in paths and bodies alike.
 */
import { postJson, request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Cased
version: 1
description: Agent for id case rules
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`;

describe('id case', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'cased.yaml': AGENT } });
    base = `${t.url}/Cased/1`;
  });
  afterAll(() => t?.close());

  it('a session and task created with upper-case ids are listed and read under those ids, and only those', async () => {
    const created = await postJson(base, { session_id: 'Sess-ABC', task_id: 'Task-XYZ', items: [{ content_type: 'text', content: 'hi' }] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ session_id: 'Sess-ABC', task_id: 'Task-XYZ' });

    const sessions = await request(`${base}/sessions`);
    expect(sessions.status).toBe(200);
    expect(sessions.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual(['Sess-ABC']);

    const session = await request(`${base}/sessions/Sess-ABC`);
    expect(session.status).toBe(200);
    expect(session.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual(['Task-XYZ']);
    expect((await request(`${t.url}/Cased/1/tasks/Task-XYZ`)).status).toBe(200);

    // Another case is another id.
    expect((await request(`${base}/sessions/sess-abc`)).status).toBe(404);
    expect((await request(`${base}/tasks/task-xyz`)).status).toBe(404);
  });

  it('a request id is the same id in any case, in a path and in a body', async () => {
    const created = await postJson(base, { items: [{ content_type: 'text', content: 'one' }] });
    expect(created.status).toBe(200);
    const { task_id: taskId, request_id: requestId } = created.body as { task_id: string; request_id: string };
    expect(requestId).toBe(requestId.toLowerCase());

    const fork = await postJson(`${base}/tasks/${taskId}/fork`, { request_id: requestId.toUpperCase() });
    expect(fork.status).toBe(201);

    const edit = await postJson(`${base}/tasks/${taskId}/requests/${requestId.toUpperCase()}/edit`, { items: [{ content_type: 'text', content: 'uno' }] });
    expect(edit.status).toBe(200);
  });
});
