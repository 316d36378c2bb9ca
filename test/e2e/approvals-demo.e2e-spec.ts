import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { postJson } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

/** The shipped approval demo on the offline model: pause, approve, reject, as docs/tools.md shows. */
describe('GuardedNotes demo (local/echo)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'guarded-notes.yaml': readFileSync(join(__dirname, '../../demos/agents/guarded-notes.yaml'), 'utf8') } });
  });
  afterAll(() => t?.close());

  it('list runs at once; save waits for approval; delete rejected does not run', async () => {
    const api = v3Client(`${t.url}/GuardedNotes/0.1`);
    expect((await api.say('/tool Notes-list {}')).body.content.output).toBe('No notes.');

    const paused = await api.say('/tool Notes-save {"title": "milk", "body": "buy 2 l"}');
    expect(paused.body).toMatchObject({ status: 'Paused', content: { tool_calls: [{ name: 'Notes-save' }] } });
    const approved = await postJson(t.url + paused.body.content.approval_url, { action: 'approve' });
    expect(approved.body).toMatchObject({ status: 'Completed', output: 'Saved milk' });

    const del = await api.say('/tool Notes-delete {"title": "milk"}', { task_id: paused.body.task_id });
    expect(del.body.status).toBe('Paused');
    const rejected = await postJson(t.url + del.body.content.rejection_url, { action: 'reject' });
    expect(rejected.body).toMatchObject({ status: 'Canceled', message: 'Tool excecution rejected.', reason: 'rejected' });
    expect((await api.say('/tool Notes-list {}')).body.content.output).toBe('milk: buy 2 l');
  });
});
