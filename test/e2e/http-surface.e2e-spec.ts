import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { loadAgentConfigs } from '../../src/agents/config/load-agent-configs';
import { ApiCommonModule } from '../../src/api/common/api-common.module';
import { isKnownLocalModel } from '../../src/llm/local/local-models';
import { postJson, request } from '../support/http';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const v2 = (name: string, version: string, extra = '') => `apiVersion: skagents/v2alpha1
kind: Agent
name: ${name}
version: ${version}
${extra}
spec:
  agent:
    name: default
    model: local/echo
`;

/** Several agents in one process: two versions of one name, v1 and v2alpha1, three description sources. */
const AGENTS = {
  'alpha-01.yaml': v2(
    'Alpha',
    '0.1',
    `description: The top-level description loses to metadata
metadata:
  description: >
    Alpha, described in metadata
    over two folded lines.`,
  ),
  'alpha-02.yaml': v2('Alpha', '0.2', 'description: Alpha, second version'),
  'beta.yml': `apiVersion: skagents/v1
kind: Chat
service_name: Beta
version: 2.0
description: Beta, described at the top level
input_type: BaseInput
spec:
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`,
  'gamma.yaml': v2('Gamma', 'v1'),
  'ignored.txt': 'not yaml: this file is not an agent',
};

const HELLO = { chat_history: [{ role: 'user', content: 'hi' }] };

function expectProblem(res: { status: number; headers: Headers; body: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toEqual(
    expect.objectContaining({ type: expect.any(String), title: expect.any(String), status, detail: expect.any(String), instance: expect.any(String), code }),
  );
}

describe('HTTP surface: several agents in one process', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS });
  });
  afterAll(() => t.close());

  it('serves each YAML agent under its own /{name}/{version}', async () => {
    expect(t.agents.map((a) => a.prefix).sort()).toEqual(['/Alpha/0.1', '/Alpha/0.2', '/Beta/2.0', '/Gamma/v1']);
    for (const [prefix, source] of [
      ['/Alpha/0.1', 'Alpha:0.1'],
      ['/Alpha/0.2', 'Alpha:0.2'],
      ['/Beta/2.0', 'Beta:2.0'],
      ['/Gamma/v1', 'Gamma:v1'],
    ] as const) {
      const res = await postJson(`${t.url}${prefix}`, HELLO);
      expect({ prefix, status: res.status, source: res.body.source, output: res.body.output_raw }).toEqual({
        prefix,
        status: 200,
        source,
        output: 'hi',
      });
    }
  });

  it.each([
    ['GET', '/Alpha/9.9/health'],
    ['POST', '/Alpha/9.9'],
    ['POST', '/Nobody/0.1/sse'],
    ['GET', '/Nobody/0.1/openapi.json'],
    // `GET /` is the service index (service-index.e2e-spec.ts); `POST /` is no route.
    ['POST', '/'],
    ['GET', '/Alpha'],
    ['GET', '/Alpha/0.1'],
  ])('answers %s %s (no such agent or route) with a 404 problem', async (method, path) => {
    const res = await request(`${t.url}${path}`, { method, ...(method === 'POST' ? { body: HELLO } : {}) });
    expectProblem(res, 404, 'ROUTE_NOT_FOUND');
    expect(res.body.instance).toBe(path);
  });

  describe('health', () => {
    it('GET /{name}/{version}/health answers the upstream HealthStatus shape', async () => {
      const res = await request(`${t.url}/Gamma/v1/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({ status: 'healthy', timestamp: expect.stringMatching(ISO), version: 'v1', uptime: expect.any(Number), dependencies: null });
      expect(res.body.uptime).toBeGreaterThanOrEqual(0);
      expect((await request(`${t.url}/Alpha/0.2/health`)).body.version).toBe('0.2');
    });

    it('GET .../health/live answers the upstream LivenessStatus shape', async () => {
      const res = await request(`${t.url}/Beta/2.0/health/live`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ alive: true, timestamp: expect.stringMatching(ISO) });
    });

    it('GET .../health/ready is 200 with every check up', async () => {
      const res = await request(`${t.url}/Alpha/0.1/health/ready`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ ready: true, timestamp: expect.stringMatching(ISO), checks: { config: { status: 'up' } } });
      for (const check of Object.values(res.body.checks)) expect(check).toEqual({ status: 'up' });
    });

    // The process-level probes (API.md: "At the root: ... GET /health/live, GET /health/ready"):
    // what a container HEALTHCHECK and Kubernetes probes call without knowing any agent's name.
    it('GET /health/live and /health/ready at the root answer without naming an agent', async () => {
      const live = await request(`${t.url}/health/live`);
      expect(live.status).toBe(200);
      expect(live.body).toEqual({ alive: true, timestamp: expect.stringMatching(ISO) });
      const ready = await request(`${t.url}/health/ready`);
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ ready: true });
    });
  });

  describe('openapi.json (what the orchestrators read)', () => {
    const doc = async (prefix: string) => {
      const res = await request(`${t.url}${prefix}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      return res.body;
    };

    it.each([
      ['/Alpha/0.1', 'metadata.description', 'Alpha, described in metadata over two folded lines.'],
      ['/Beta/2.0', 'description', 'Beta, described at the top level'],
      ['/Gamma/v1', 'neither: "{name} API"', 'Gamma API'],
    ])('%s: the first path is POST "" described by %s', async (prefix, _source, description) => {
      const body = await doc(prefix);
      const [firstPath, firstItem] = Object.entries(body.paths)[0] as [string, Record<string, { description?: string }>];
      expect(firstPath).toBe(prefix);
      // The assistant orchestrator reads next(iter(paths.values())).post.description ...
      expect(firstItem.post!.description).toBe(description);
      // ... the collab orchestrator reads paths["/{name}/{version}"].post.description.
      expect(body.paths[prefix].post.description).toBe(description);
      expect(body.paths[`${prefix}/sse`].post.description).toBe(`${description}\nInitiate SSE call`);
    });

    it('documents only its own agent, with the version as a string', async () => {
      const body = await doc('/Alpha/0.2');
      expect(body.openapi).toMatch(/^3\./);
      expect(body.info).toMatchObject({ title: 'Alpha', version: '0.2' });
      expect(Object.keys(body.paths).every((p) => p.startsWith('/Alpha/0.2'))).toBe(true);
      expect(Object.keys(body.paths)).toEqual(
        expect.arrayContaining(['/Alpha/0.2', '/Alpha/0.2/sse', '/Alpha/0.2/health', '/Alpha/0.2/health/live', '/Alpha/0.2/health/ready']),
      );
    });
  });

  describe('docs (Swagger UI)', () => {
    it('GET /{name}/{version}/docs returns the Swagger UI page, pointed at that agent', async () => {
      const res = await request(`${t.url}/Beta/2.0/docs`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.text).toMatch(/^<!doctype html>/i);
      expect(res.text).toContain('SwaggerUIBundle(');
      expect(res.text).toContain('"/Beta/2.0/openapi.json"');
    });

    it('every stylesheet and script the page references loads', async () => {
      const page = (await request(`${t.url}/Alpha/0.1/docs`)).text;
      const assets = [...page.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]!);
      expect(assets).toEqual(['/Alpha/0.1/docs/swagger-ui.css', '/Alpha/0.1/docs/swagger-ui-bundle.js']);
      for (const asset of assets) {
        const res = await fetch(`${t.url}${asset}`);
        const text = await res.text();
        expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
        expect(res.headers.get('content-type')).toMatch(asset.endsWith('.css') ? /^text\/css/ : /^application\/javascript/);
        expect(text.length).toBeGreaterThan(10_000);
      }
      expect(await (await fetch(`${t.url}/Alpha/0.1/docs/swagger-ui-bundle.js`)).text()).toContain('SwaggerUIBundle');
    });

    it.each(['/Alpha/0.1/docs/index.html', '/Alpha/0.1/docs/..%2F..%2Fpackage.json', '/Alpha/0.1/docs/swagger-ui.css.map'])(
      'serves no other file: %s is 404',
      async (path) => {
        expectProblem(await request(`${t.url}${path}`), 404, 'ROUTE_NOT_FOUND');
      },
    );
  });
});

describe('HTTP surface: readiness when a check fails', () => {
  let app: NestExpressApplication;
  let url: string;
  beforeAll(async () => {
    const agents = loadAgentConfigs(writeAgentDir({ 'a.yaml': v2('Ready', '1') }), isKnownLocalModel);
    const checks = [
      { name: 'config', check: async () => undefined },
      {
        name: 'state_store',
        check: async () => {
          throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
        },
      },
    ];
    app = await NestFactory.create<NestExpressApplication>(ApiCommonModule.register(agents, checks), { logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(() => app.close());

  it('answers 503 naming the failing check, while live stays 200', async () => {
    const ready = await request(`${url}/Ready/1/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({
      ready: false,
      timestamp: expect.stringMatching(ISO),
      checks: { config: { status: 'up' }, state_store: { status: 'down', error: 'connect ECONNREFUSED 127.0.0.1:6379' } },
    });
    expect((await request(`${url}/Ready/1/health/live`)).status).toBe(200);
  });
});
