import { join } from 'node:path';
import { postJson } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

describe('stateless agents on the built-in offline model (demos/agents)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents') });
  });
  afterAll(() => t.close());

  it('serves every demo agent under /{name}/{version}', () => {
    expect(t.agents.map((a) => a.prefix).sort()).toEqual([
      '/Assistant/0.1',
      '/Calculator/0.1',
      '/ChatBot/1.0',
      '/EchoAgent/0.1',
      '/GuardedNotes/0.1',
      '/PlannerBot/0.1',
      '/TodoAssistant/0.1',
    ]);
  });

  it('answers a v2alpha1 invoke with an InvokeResponse', async () => {
    const res = await postJson(`${t.url}/EchoAgent/0.1`, {
      session_id: 's-1',
      chat_history: [{ role: 'user', content: 'hello there' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: 's-1',
      source: 'EchoAgent:0.1',
      request_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      token_usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
      extra_data: null,
      output_raw: 'hello there',
      output_pydantic: null,
    });
  });

  it('renders Sequential task templates over user_context and earlier task outputs', async () => {
    const res = await postJson(`${t.url}/PlannerBot/0.1`, {
      chat_history: [{ role: 'user', content: 'weather?' }],
      user_context: { 'User Location': 'Oslo', lang: 'en' },
    });
    expect(res.status).toBe(200);
    expect(res.body.output_raw.trim()).toBe('Answer using this plan: Plan for a user in Oslo. User Location=Oslo;lang=en;');
  });
});
