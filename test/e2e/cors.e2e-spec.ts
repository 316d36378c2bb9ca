import { EnvConfigError, loadEnvConfig } from '../../src/config/env.config';
import { JsonResponse, request } from '../support/http';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { AGENTS } from '../support/cors-agents';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * CORS over real HTTP (docs/api.md, CORS): preflights answered before auth, routing and the 415
 * check; allowed and refused origins; `*` with dev auth only; errors readable by a browser script.
 * The same in a real browser: cors-browser.e2e-spec.ts.
 */

const APP = 'https://app.example.com';
const LOCAL = 'http://localhost:5173';
const EVIL = 'https://evil.example';
const HELLO = { chat_history: [{ role: 'user', content: 'hi' }] };
const MESSAGE = { items: [{ content_type: 'text', content: 'hi' }] };

const preflight = (url: string, origin: string, method = 'POST', headers = 'authorization,content-type') =>
  request(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, ...(headers ? { 'access-control-request-headers': headers } : {}) },
  });

const list = (value: string | null) => (value ?? '').split(',').map((s) => s.trim().toLowerCase());

function expectAllowedPreflight(res: JsonResponse, origin: string) {
  expect(res.status).toBe(204);
  expect(res.text).toBe('');
  expect(res.headers.get('access-control-allow-origin')).toBe(origin);
  expect(list(res.headers.get('access-control-allow-methods'))).toEqual(expect.arrayContaining(['get', 'post', 'delete']));
  expect(list(res.headers.get('access-control-allow-headers'))).toEqual(expect.arrayContaining(['authorization', 'content-type', 'last-event-id']));
  expect(res.headers.get('access-control-max-age')).toBe('600');
  expect(list(res.headers.get('vary'))).toContain('origin');
  expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

function expectNoCors(res: JsonResponse) {
  for (const h of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-expose-headers']) {
    expect({ h, v: res.headers.get(h) }).toEqual({ h, v: null });
  }
}

function expectReadableBy(res: JsonResponse, origin: string) {
  expect(res.headers.get('access-control-allow-origin')).toBe(origin);
  expect(list(res.headers.get('access-control-expose-headers'))).toEqual(
    expect.arrayContaining(['retry-after', 'x-request-id', 'www-authenticate', 'traceresponse', 'location']),
  );
  expect(res.headers.get('access-control-allow-credentials')).toBeNull();
}

describe('CORS with TA_CORS_ORIGINS listing origins (dev auth)', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Upper case and the default port: compared as browsers serialize Origin.
    t = await startTestApp({ agents: AGENTS, env: { TA_CORS_ORIGINS: `HTTPS://App.Example.com:443, ${LOCAL}` } });
  });
  afterAll(() => t.close());

  it.each([
    ['POST', '/Echo/0.1'],
    ['POST', '/Echo/0.1/sse'],
    ['GET', '/Echo/0.1/stream'],
    ['POST', '/Assistant/0.1'],
    ['POST', '/Assistant/0.1/sse'],
    ['GET', '/Assistant/0.1/tasks/some-task'],
    ['DELETE', '/Assistant/0.1/tasks/some-task'],
    ['POST', '/Assistant/0.1/tealagents/v1alpha1/resume/some-request'],
    ['POST', '/Assistant/0.1/tealagents/v1alpha1/resume/some-request/sse'],
    ['POST', '/Assistant/0.1/no-such-route'],
    ['GET', '/Assistant/0.1/health'],
    ['GET', '/'],
  ])('answers the preflight of %s %s with 204 before auth and routing', async (method, path) => {
    const res = await preflight(`${t.url}${path}`, APP, method, 'authorization,content-type,last-event-id');
    expectAllowedPreflight(res, APP);
  });

  it('allows the headers of retries, background runs and MCP clients, and exposes what they answer with', async () => {
    const res = await preflight(`${t.url}/Assistant/0.1`, APP, 'POST', 'authorization,content-type,idempotency-key,prefer,mcp-session-id,mcp-protocol-version');
    expectAllowedPreflight(res, APP);
    expect(list(res.headers.get('access-control-allow-headers'))).toEqual(
      expect.arrayContaining(['idempotency-key', 'prefer', 'mcp-session-id', 'mcp-protocol-version']),
    );
    const call = await request(`${t.url}/Echo/0.1`, { body: HELLO, headers: { origin: APP } });
    expect(list(call.headers.get('access-control-expose-headers'))).toEqual(expect.arrayContaining(['preference-applied', 'mcp-session-id', 'location']));
  });

  it('answers each listed origin with itself, never with the list', async () => {
    const res = await preflight(`${t.url}/Echo/0.1`, LOCAL);
    expectAllowedPreflight(res, LOCAL);
    expect(list(res.headers.get('access-control-allow-headers'))).toContain('x-dev-user');
  });

  it('refuses the preflight of another origin with 403 problem+json and no CORS headers', async () => {
    for (const origin of [EVIL, 'http://app.example.com', 'https://app.example.com:8443', 'null']) {
      const res = await preflight(`${t.url}/Echo/0.1`, origin);
      expect({ origin, status: res.status }).toEqual({ origin, status: 403 });
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toEqual(expect.objectContaining({ status: 403, code: 'CORS_ORIGIN_NOT_ALLOWED', instance: '/Echo/0.1' }));
      expect(res.body.detail).toContain('TA_CORS_ORIGINS');
      expect(list(res.headers.get('vary'))).toContain('origin');
      expectNoCors(res);
    }
  });

  it('lets an allowed origin read the answer of a call, and its exposed headers', async () => {
    const res = await request(`${t.url}/Echo/0.1`, { body: HELLO, headers: { origin: APP } });
    expect(res.status).toBe(200);
    expect(res.body.output_raw).toBe('hi');
    expectReadableBy(res, APP);
    expect(list(res.headers.get('vary'))).toContain('origin');
  });

  it('serves a call from another origin as usual, without CORS headers (the browser keeps the answer)', async () => {
    const res = await request(`${t.url}/Echo/0.1`, { body: HELLO, headers: { origin: EVIL } });
    expect(res.status).toBe(200);
    expectNoCors(res);
    expect(list(res.headers.get('vary'))).toContain('origin');
    const plain = await request(`${t.url}/Echo/0.1`, { body: HELLO });
    expect(plain.status).toBe(200);
    expectNoCors(plain);
  });

  it('puts the CORS headers on event streams', async () => {
    const res = await request(`${t.url}/Assistant/0.1/sse`, { body: MESSAGE, headers: { origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.text).toContain('event: final-response');
    expectReadableBy(res, APP);
  });

  it('puts the CORS headers on problem+json errors: 404, 415, 422, 409', async () => {
    const notFound = await request(`${t.url}/Assistant/0.1/tasks/nobody-has-this`, { headers: { origin: APP } });
    expect(notFound.status).toBe(404);
    expectReadableBy(notFound, APP);

    const unknown = await request(`${t.url}/Assistant/0.1/no-such-route`, { body: MESSAGE, headers: { origin: APP } });
    expect(unknown.status).toBe(404);
    expectReadableBy(unknown, APP);

    const textPlain = await request(`${t.url}/Echo/0.1`, { method: 'POST', rawBody: 'hi', headers: { origin: APP, 'content-type': 'text/plain' } });
    expect(textPlain.status).toBe(415);
    expect(textPlain.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expectReadableBy(textPlain, APP);

    const invalid = await request(`${t.url}/Assistant/0.1`, { body: { items: [] }, headers: { origin: APP } });
    expect(invalid.status).toBe(422);
    expectReadableBy(invalid, APP);

    const first = await request(`${t.url}/Assistant/0.1`, { body: MESSAGE, headers: { origin: APP } });
    const notRunning = await request(`${t.url}/Assistant/0.1/tasks/${first.body.task_id}/cancel`, { method: 'POST', headers: { origin: APP } });
    expect(notRunning.status).toBe(409);
    expect(notRunning.body.code).toBe('TASK_NOT_RUNNING');
    expectReadableBy(notRunning, APP);
  });

  it('leaves OPTIONS without Access-Control-Request-Method to routing', async () => {
    const res = await request(`${t.url}/Echo/0.1`, { method: 'OPTIONS', headers: { origin: APP } });
    expect(res.status).toBe(404);
    expectReadableBy(res, APP);
  });
});

describe('CORS with TA_CORS_ORIGINS=* (dev auth)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS, env: { TA_CORS_ORIGINS: '*' } });
  });
  afterAll(() => t.close());

  it('answers any origin with *, preflights and calls alike', async () => {
    const pre = await preflight(`${t.url}/Assistant/0.1/tasks/x`, EVIL, 'GET');
    expectAllowedPreflight(pre, '*');
    const res = await request(`${t.url}/Echo/0.1`, { body: HELLO, headers: { origin: EVIL } });
    expect(res.status).toBe(200);
    expectReadableBy(res, '*');
  });
});

describe('CORS without TA_CORS_ORIGINS (the default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS });
  });
  afterAll(() => t.close());

  it('refuses every preflight, saying why, and adds no CORS header to calls', async () => {
    const pre = await preflight(`${t.url}/Echo/0.1`, APP);
    expect(pre.status).toBe(403);
    expect(pre.body.code).toBe('CORS_ORIGIN_NOT_ALLOWED');
    expect(pre.body.detail).toMatch(/TA_CORS_ORIGINS is not set/);
    expectNoCors(pre);
    const res = await request(`${t.url}/Echo/0.1`, { body: HELLO, headers: { origin: APP } });
    expect(res.status).toBe(200);
    expectNoCors(res);
    expect(res.headers.get('vary')).toBeNull();
  });
});

describe('CORS with Entra ID bearer tokens', () => {
  const TENANT = 'c0ffee00-0000-4000-8000-0000000000a1';
  let issuer: OidcIssuer;
  let t: TestApp;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({
      agents: AGENTS,
      env: entraEnv(issuer, { TA_ENTRA_TENANT_ID: TENANT, TA_ENTRA_JWKS_COOLDOWN_MS: '0', TA_LOG_LEVEL: 'silent', TA_CORS_ORIGINS: APP }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await issuer.close();
  });

  it('answers the preflight without a token, and not X-Dev-User', async () => {
    const res = await preflight(`${t.url}/Assistant/0.1`, APP);
    expectAllowedPreflight(res, APP);
    expect(list(res.headers.get('access-control-allow-headers'))).not.toContain('x-dev-user');
    expect(issuer.counts.metadata + issuer.counts.jwks).toBe(0);
  });

  it('lets the page read a 401 and its WWW-Authenticate challenge', async () => {
    const res = await request(`${t.url}/Assistant/0.1`, { body: MESSAGE, headers: { origin: APP } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expectReadableBy(res, APP);
  });

  it('serves a call with a valid token, readable by the page', async () => {
    const token = await issuer.mint({ tid: TENANT });
    const res = await request(`${t.url}/Assistant/0.1`, { body: MESSAGE, headers: { origin: APP, authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('Completed');
    expectReadableBy(res, APP);
  });

  it('refuses TA_CORS_ORIGINS=* at boot, naming the variable', async () => {
    const boot = startTestApp({ agents: AGENTS, env: entraEnv(issuer, { TA_ENTRA_TENANT_ID: TENANT, TA_CORS_ORIGINS: '*' }) });
    await expect(boot).rejects.toBeInstanceOf(EnvConfigError);
    await expect(boot).rejects.toThrow(/TA_CORS_ORIGINS=\* is refused when TA_AUTH_MODE=entra/);
  });
});

describe('TA_CORS_ORIGINS validation at boot', () => {
  it.each([
    ['https://app.example.com/'],
    ['https://app.example.com/app'],
    ['https://app.example.com?x=1'],
    ['app.example.com'],
    ['ftp://app.example.com'],
    ['https://user@app.example.com'],
    ['https://app.example.com:99999'],
    ['*,https://app.example.com'],
    ['null'],
  ])('refuses %j with a message naming TA_CORS_ORIGINS', (value) => {
    const load = () => loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_CORS_ORIGINS: value });
    expect(load).toThrow(EnvConfigError);
    expect(load).toThrow(/TA_CORS_ORIGINS must be a comma-separated list of origins, each scheme:\/\/host\[:port\] with no path/);
  });

  it('accepts origins (commas and spaces), ports and IP literals, serialized as browsers send them', () => {
    const env = loadEnvConfig({
      TA_AUTH_MODE: 'dev',
      TA_CORS_ORIGINS: 'https://App.Example.com:443, http://localhost:5173 http://127.0.0.1:8080,http://[::1]:3000',
    });
    expect(env.cors).toEqual({
      anyOrigin: false,
      origins: ['https://app.example.com', 'http://localhost:5173', 'http://127.0.0.1:8080', 'http://[::1]:3000'],
    });
    expect(loadEnvConfig({ TA_AUTH_MODE: 'dev' }).cors).toEqual({ anyOrigin: false, origins: [] });
    expect(loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_CORS_ORIGINS: '*' }).cors).toEqual({ anyOrigin: true, origins: [] });
  });
});
