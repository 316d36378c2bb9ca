/**
 * TA_FRONT_DOORS (docs/api.md, "Front doors"): each protocol's routes exist only when it is named.
 * With `agui` alone, the REST routes are 404 while AG-UI answers; with `rest` alone, the AG-UI, A2A,
 * MCP and OpenAI-compatible routes are 404. Real HTTP, the built-in offline model.
 */
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';
import { ECHO_ASSISTANT } from '../support/v3-agents';

const AGENTS = { 'assistant.yaml': ECHO_ASSISTANT };
const MESSAGE = { items: [{ content_type: 'text', content: 'hi' }] };
const RUN = { threadId: 't-1', runId: 'r-1', messages: [{ id: 'm-1', role: 'user', content: 'hi' }], tools: [], context: [], state: {}, forwardedProps: {} };

describe('TA_FRONT_DOORS', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('with agui alone: the REST routes are gone, AG-UI answers', async () => {
    const t = await startTestApp({ agents: AGENTS, env: { TA_FRONT_DOORS: 'agui' } });
    apps.push(t);
    const rest = await request(`${t.url}/Assistant/0.1`, { body: MESSAGE });
    expect([rest.status, rest.body.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
    const agui = await request(`${t.url}/Assistant/0.1/ag-ui`, { body: RUN, headers: { accept: 'text/event-stream' } });
    expect(agui.status).toBe(200);
    expect(agui.text).toContain('RUN_FINISHED');
  });

  it('with rest alone: AG-UI, A2A, MCP and the OpenAI-compatible routes are gone, REST answers', async () => {
    const t = await startTestApp({ agents: AGENTS, env: { TA_FRONT_DOORS: 'rest' } });
    apps.push(t);
    expect((await request(`${t.url}/Assistant/0.1`, { body: MESSAGE })).body.status).toBe('Completed');
    for (const [method, path] of [
      ['POST', '/Assistant/0.1/ag-ui'],
      ['POST', '/Assistant/0.1/a2a'],
      ['GET', '/Assistant/0.1/.well-known/agent-card.json'],
      ['POST', '/Assistant/0.1/mcp'],
      ['GET', '/openai/v1/models'],
      ['POST', '/openai/v1/chat/completions'],
    ] as const) {
      const res = await request(`${t.url}${path}`, { method, ...(method === 'POST' ? { body: {} } : {}) });
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
  });
});
