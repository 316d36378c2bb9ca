import { IncomingMessage, ServerResponse, Server } from 'node:http';
import { AGENTS } from '../support/cors-agents';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The HTTP server's requests and responses are made with the Express app's prototypes
 * (src/common/http/express-server.ts): Express's `Object.setPrototypeOf` on each then changes
 * nothing (V8's slow path when it does; issue 27). Everything a request meets still works.
 */
describe('requests and responses born with the Express prototypes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: AGENTS });
  });
  afterAll(() => t?.close());

  it("has them before Express sees the request, and they are still Node's IncomingMessage and ServerResponse", async () => {
    const express = t.app.getHttpAdapter().getInstance() as { request: object; response: object };
    const server = t.app.getHttpServer() as Server;
    const seen: { req: boolean; res: boolean; node: boolean }[] = [];
    const before = (req: IncomingMessage, res: ServerResponse) =>
      seen.push({
        req: Object.getPrototypeOf(req) === express.request,
        res: Object.getPrototypeOf(res) === express.response,
        node: req instanceof IncomingMessage && res instanceof ServerResponse,
      });
    server.prependListener('request', before);
    try {
      const res = await request(`${t.url}/Echo/0.1`, { method: 'POST', body: { chat_history: [{ role: 'user', content: 'born right' }] } });
      expect(res.status).toBe(200);
      expect(res.body.output_raw).toBe('born right');
      const health = await request(`${t.url}/health/live`);
      expect(health.status).toBe(200);
    } finally {
      server.removeListener('request', before);
    }
    expect(seen).toEqual([
      { req: true, res: true, node: true },
      { req: true, res: true, node: true },
    ]);
  });

  it("keeps Express's request and response helpers (a 404 problem carrying the request's id)", async () => {
    const res = await request(`${t.url}/Nope/9.9`, { headers: { 'x-request-id': 'proto-404' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe('proto-404');
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});
