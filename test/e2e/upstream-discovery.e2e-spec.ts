import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * How upstream's orchestrators discover an agent from its `openapi.json`, and the ReDoc page FastAPI
 * serves beside it. Run over every agent this project ships (demos/agents) and every upstream-format
 * fixture, so a route added later without a description fails here.
 */
const ROOT = resolve(__dirname, '../..');
const SOURCES: [string, string][] = [
  ['demos/agents', join(ROOT, 'demos/agents')],
  ['test/fixtures/upstream/orchestrated', join(ROOT, 'test/fixtures/upstream/orchestrated')],
  ['test/fixtures/upstream/v1alpha1', join(ROOT, 'test/fixtures/upstream/v1alpha1')],
  ['test/fixtures/upstream/python-plugins/ported', join(ROOT, 'test/fixtures/upstream/python-plugins/ported')],
  ['test/fixtures/config/valid', join(ROOT, 'test/fixtures/config/valid')],
];
// The fixtures name upstream's models (gpt-4o, ...): a provider must be configured for them to boot.
// Discovery never calls the model, so it points nowhere.
const PROVIDER_ENV = { TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'never-used', TA_LOG_LEVEL: 'silent' };

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The Assistant orchestrator's parse, as upstream writes it (assistant-orchestrator/orchestrator/
 * agents.py): `OpenApiResponse{paths: dict[str, OpenApiPath]}`, `OpenApiPath{post: OpenApiPost |
 * None, get: OpenApiPost | None}` (extra keys allowed), `OpenApiPost{description: str}`, then
 * `next(iter(paths.values())).post.description`. Any failure marks the agent unavailable (and a
 * fallback or recipient-chooser agent so marked stops the orchestrator). Returns what it would read,
 * or why it would refuse.
 */
function assistantOrchestratorDiscovery(doc: unknown): { description?: string; refusals: string[] } {
  const refusals: string[] = [];
  const paths = isObject(doc) ? doc.paths : undefined;
  if (!isObject(paths)) return { refusals: ['paths is not a mapping'] };
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) {
      refusals.push(`${path} is not a mapping`);
      continue;
    }
    for (const method of ['post', 'get']) {
      const op = item[method];
      if (op === undefined || op === null) continue;
      // pydantic's `str` takes only a string (no coercion from numbers, no null).
      if (!isObject(op) || typeof op.description !== 'string') refusals.push(`${method.toUpperCase()} ${path} has no description`);
    }
  }
  const first = Object.values(paths)[0];
  const post = isObject(first) ? first.post : undefined;
  if (!isObject(post)) refusals.push('the first path has no POST (.post.description raises)');
  return { description: isObject(post) && typeof post.description === 'string' ? post.description : undefined, refusals };
}

/** Stricter and generic: every operation of every path (whatever its method) has a non-empty description. */
function undescribedOperations(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .filter(([, op]) => !isObject(op) || typeof op.description !== 'string' || !op.description.trim())
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
}

describe.each(SOURCES)('discovery of every agent in %s', (_label, configPath) => {
  let t: TestApp;
  const docs = new Map<string, { paths: Record<string, Record<string, unknown>> }>();
  beforeAll(async () => {
    t = await startTestApp({ configPath, env: PROVIDER_ENV });
    for (const a of t.agents) {
      const res = await request(`${t.url}${a.prefix}/openapi.json`);
      expect([a.prefix, res.status]).toEqual([a.prefix, 200]);
      docs.set(a.prefix, res.body);
    }
  });
  afterAll(() => t?.close());

  it("passes the Assistant orchestrator's parse, which reads the agent's description", () => {
    expect(t.agents.length).toBeGreaterThan(0);
    for (const a of t.agents) {
      expect({ agent: a.prefix, ...assistantOrchestratorDiscovery(docs.get(a.prefix)) }).toEqual({
        agent: a.prefix,
        description: a.description,
        refusals: [],
      });
    }
  });

  it('describes every operation, the health routes included', () => {
    for (const a of t.agents) {
      const doc = docs.get(a.prefix)!;
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([`${a.prefix}/health`, `${a.prefix}/health/live`]));
      expect({ agent: a.prefix, undescribed: undescribedOperations(doc) }).toEqual({ agent: a.prefix, undescribed: [] });
    }
  });

  it("gives the collab orchestrator paths['/{name}/{version}'].post.description", () => {
    for (const a of t.agents) {
      const item = docs.get(a.prefix)!.paths[a.prefix] as { post?: { description?: string } };
      expect([a.prefix, item.post?.description]).toEqual([a.prefix, a.description]);
    }
  });
});

describe('the discovery rule itself refuses what the Assistant orchestrator refuses', () => {
  const post = { description: 'An agent' };
  it.each([
    ['a GET without description', { '/A/1': { post }, '/A/1/health': { get: { summary: 'Health' } } }, ['GET /A/1/health has no description']],
    ['a POST with a null description', { '/A/1': { post }, '/A/1/x': { post: { description: null } } }, ['POST /A/1/x has no description']],
    [
      'a first path without POST',
      { '/A/1/health': { get: { description: 'h' } }, '/A/1': { post } },
      ['the first path has no POST (.post.description raises)'],
    ],
  ])('%s', (_label, paths, refusals) => {
    expect(assistantOrchestratorDiscovery({ paths }).refusals).toEqual(refusals);
  });

  it('accepts other methods without description (it reads only get and post), which the generic rule does not', () => {
    const doc = { paths: { '/A/1': { post }, '/A/1/x': { delete: { summary: 'gone' } } } };
    expect(assistantOrchestratorDiscovery(doc).refusals).toEqual([]);
    expect(undescribedOperations(doc)).toEqual(['DELETE /A/1/x']);
  });
});

describe('GET /{name}/{version}/redoc (ReDoc, local assets only)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(ROOT, 'test/fixtures/upstream/orchestrated'), env: PROVIDER_ENV });
  });
  afterAll(() => t?.close());

  it('serves the ReDoc page for that agent', async () => {
    const res = await request(`${t.url}/MathAgent/0.1/redoc`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toMatch(/^<!doctype html>/i);
    expect(res.text).toContain('<redoc spec-url="/MathAgent/0.1/openapi.json"></redoc>');
    expect(res.text).toContain('<title>MathAgent:0.1 API</title>');
  });

  it('references only its own origin, and every reference loads: the bundle of the installed redoc and the document', async () => {
    const page = (await request(`${t.url}/ChatAgent/0.1/redoc`)).text;
    expect(page).not.toMatch(/https?:|\/\//);
    const refs = [...page.matchAll(/(?:href|src|spec-url)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.sort()).toEqual(['/ChatAgent/0.1/openapi.json', '/ChatAgent/0.1/redoc/redoc.standalone.js']);

    const script = await fetch(`${t.url}/ChatAgent/0.1/redoc/redoc.standalone.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^application\/javascript/);
    const installed = readFileSync(join(ROOT, 'node_modules/redoc/bundles/redoc.standalone.js'));
    expect(Buffer.from(await script.arrayBuffer()).equals(installed)).toBe(true);

    const doc = await request(`${t.url}/ChatAgent/0.1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.info).toMatchObject({ title: 'ChatAgent', version: '0.1' });
  });

  it("forbids the browser any other origin, so the bundle's own CDN logo request is refused", async () => {
    const res = await request(`${t.url}/MathAgent/0.1/redoc`);
    const csp = Object.fromEntries(
      res.headers
        .get('content-security-policy')!
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...sources]) => [name, sources]),
    );
    expect(csp['default-src']).toEqual(["'self'"]);
    for (const directive of ['script-src', 'style-src', 'img-src', 'font-src', 'connect-src', 'worker-src']) {
      for (const source of csp[directive] ?? csp['default-src'])
        expect([directive, source]).toEqual([directive, expect.stringMatching(/^('self'|'unsafe-inline'|blob:|data:)$/)]);
    }
  });

  it.each(['/MathAgent/0.1/redoc/redoc.standalone.js.map', '/MathAgent/0.1/redoc/redoc.lib.js', '/MathAgent/0.1/redoc/..%2F..%2Fpackage.json'])(
    'serves no other file: %s is 404',
    async (path) => {
      const res = await request(`${t.url}${path}`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    },
  );
});
