import { AGENTS } from '../support/cors-agents';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The app's own middlewares (request id, telemetry, CORS, draining, the 415 check, the JSON body
 * reader) run as one Express layer (src/common/http/middleware-chain.ts): Express's router walks
 * fewer layers per request (issue 27), and each middleware still does its part, in order.
 */

const APP = 'https://app.example.com';

describe("the app's middlewares as one Express layer", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS, env: { TA_CORS_ORIGINS: APP } });
  });
  afterAll(() => t?.close());

  it('leaves at most four layers before the first route (there were nine)', () => {
    const stack = (t.app.getHttpAdapter().getInstance() as { router: { stack: { route?: unknown }[] } }).router.stack;
    const firstRoute = stack.findIndex((layer) => layer.route);
    // Nest's own, the config reload's dispatch, the chain, body-parser for what our reader leaves.
    expect(firstRoute).toBeGreaterThan(0);
    expect(firstRoute).toBeLessThanOrEqual(4);
  });

  it('runs every middleware in order on a refused body: request id, CORS headers, the 415, the log line', async () => {
    const res = await request(`${t.url}/Echo/0.1`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: APP, 'x-request-id': 'chain-415' },
      rawBody: 'hello',
    });
    expect(res.status).toBe(415);
    expect(res.headers.get('x-request-id')).toBe('chain-415');
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const line = t.logs().find((l) => l.http_request_id === 'chain-415' && l.msg === 'request completed');
    expect(line).toMatchObject({ status: 415, method: 'POST', path: '/Echo/0.1' });
  });

  it('reads a JSON body and hands it to the route', async () => {
    const res = await request(`${t.url}/Echo/0.1`, {
      method: 'POST',
      headers: { 'x-request-id': 'chain-200' },
      body: { chat_history: [{ role: 'user', content: 'through the chain' }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('chain-200');
    expect(res.body.output_raw).toBe('through the chain');
  });
});
