import type { IndexAgent } from '../../src/api/index/service-index';
import { request } from '../support/http';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { startTestApp, TestApp } from '../support/test-app';
import { ECHO_ASSISTANT } from '../support/v3-agents';

/** `GET /`: what the process serves, as JSON, or as a page for a browser (docs/api.md, Service index). */

const AGENTS = {
  'echo.yaml': `apiVersion: skagents/v2alpha1
kind: Agent
name: Echo
version: 0.1
description: Says it back
spec:
  agent:
    name: default
    model: local/echo
`,
  'chat.yaml': `apiVersion: skagents/v1
kind: Chat
service_name: Chat
version: 2.0
description: A <b>chat</b> & more
input_type: BaseInput
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`,
  'assistant.yaml': ECHO_ASSISTANT,
};

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('GET / (service index)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS, env: { TA_LOG_LEVEL: 'silent' } });
  });
  afterAll(() => t.close());

  it('lists every agent with its apiVersion, routes and links, as JSON', async () => {
    const res = await request(`${t.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('vary')).toMatch(/Accept/);
    expect(res.body).toEqual({
      service: 'teal-agent-server',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      console: '/console',
      agents: expect.any(Array),
    });
    const byPath: Record<string, IndexAgent> = Object.fromEntries((res.body.agents as IndexAgent[]).map((a) => [a.path, a]));
    expect(Object.keys(byPath).sort()).toEqual(['/Assistant/0.1', '/Chat/2.0', '/Echo/0.1']);

    expect(byPath['/Echo/0.1']).toEqual({
      name: 'Echo',
      version: '0.1',
      api_version: 'skagents/v2alpha1',
      kind: 'Agent',
      stateful: false,
      description: 'Says it back',
      path: '/Echo/0.1',
      links: {
        openapi: '/Echo/0.1/openapi.json',
        docs: '/Echo/0.1/docs',
        redoc: '/Echo/0.1/redoc',
        health: '/Echo/0.1/health',
        a2a_card: '/Echo/0.1/.well-known/agent-card.json',
      },
      routes: expect.any(Array),
    });
    const routes = (path: string) => byPath[path]!.routes;
    const names = (path: string) => routes(path).map((r) => `${r.method} ${r.path}`);
    expect(names('/Echo/0.1')).toEqual(
      expect.arrayContaining(['POST /Echo/0.1', 'POST /Echo/0.1/sse', 'GET /Echo/0.1/stream', 'GET /Echo/0.1/health', 'GET /Echo/0.1/health/ready']),
    );
    for (const r of routes('/Echo/0.1')) expect(r.summary).toEqual(expect.any(String));
    expect(byPath['/Chat/2.0']).toEqual(expect.objectContaining({ api_version: 'skagents/v1', kind: 'Chat', stateful: false }));

    expect(byPath['/Assistant/0.1']).toEqual(expect.objectContaining({ api_version: 'tealagents/v1alpha1', kind: null, stateful: true }));
    expect(names('/Assistant/0.1')).toEqual(
      expect.arrayContaining([
        'POST /Assistant/0.1',
        'POST /Assistant/0.1/sse',
        'GET /Assistant/0.1/tasks/{task_id}',
        'POST /Assistant/0.1/tasks/{task_id}/cancel',
        'POST /Assistant/0.1/tealagents/v1alpha1/resume/{request_id}',
        'GET /Assistant/0.1/sessions/{session_id}',
      ]),
    );
    // v3 agents have no WebSocket route (upstream's AppV3 mounts none).
    expect(names('/Assistant/0.1')).not.toContain('GET /Assistant/0.1/stream');

    // Every route it lists is served (the GET ones without parameters answer).
    for (const agent of Object.keys(byPath)) {
      for (const r of routes(agent).filter((x) => x.method === 'GET' && !x.path.includes('{') && !x.path.endsWith('/stream'))) {
        const got = await request(`${t.url}${r.path}`);
        expect({ route: r.path, status: got.status }).toEqual({ route: r.path, status: 200 });
      }
      expect((await request(`${t.url}${byPath[agent]!.links.openapi}`)).status).toBe(200);
    }
  });

  it('answers JSON to curl (*/*) and to no Accept, HTML to a browser', async () => {
    const curl = await request(`${t.url}/`, { headers: { accept: '*/*' } });
    expect(curl.headers.get('content-type')).toMatch(/^application\/json/);

    const page = await request(`${t.url}/`, { headers: { accept: BROWSER_ACCEPT } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html; charset=utf-8/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(page.text).toMatch(/^<!doctype html>/);
    for (const s of ['href="/Echo/0.1/docs"', 'href="/Assistant/0.1/openapi.json"', 'tealagents/v1alpha1', '/Echo/0.1/stream', 'href="/console"']) {
      expect(page.text).toContain(s);
    }
    // The agent's description is text, never markup.
    expect(page.text).toContain('A &#60;b&#62;chat&#60;/b&#62; &#38; more');
    expect(page.text).not.toContain('<b>chat</b>');
    expect(page.text).not.toMatch(/<script/i);

    const head = await fetch(`${t.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('answers an unknown top-level path with a 404 problem', async () => {
    const res = await request(`${t.url}/no-such-thing`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});

describe('GET / in entra mode', () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({
      agents: { 'assistant.yaml': AGENTS['assistant.yaml'] },
      env: entraEnv(issuer, { TA_ENTRA_TENANT_ID: 'c0ffee00-0000-4000-8000-0000000000a1', TA_LOG_LEVEL: 'silent' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await issuer.close();
  });

  it('is open, as openapi.json is, while the agent routes need a token', async () => {
    const res = await request(`${t.url}/`);
    expect(res.status).toBe(200);
    expect(res.body.agents.map((a: { path: string }) => a.path)).toEqual(['/Assistant/0.1']);
    expect((await request(`${t.url}/Assistant/0.1/tasks/x`)).status).toBe(401);
  });
});

describe('GET / with TA_CONSOLE=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'echo.yaml': AGENTS['echo.yaml'] }, env: { TA_LOG_LEVEL: 'silent', TA_CONSOLE: 'false' } });
  });
  afterAll(() => t.close());

  it('links no console', async () => {
    const res = await request(`${t.url}/`);
    expect(res.body.console).toBeNull();
    const page = await request(`${t.url}/`, { headers: { accept: BROWSER_ACCEPT } });
    expect(page.text).not.toContain('/console');
  });
});
