/**
 * The model transport (src/llm/http-fetch.ts) against a real HTTP server: what the OpenAI SDK
 * relies on from `fetch` — status, headers, the body whole or as a stream as it arrives, the url,
 * kept-alive sockets, an abort that closes the connection, and a socket error as fetch reports one.
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { httpFetch } from '../../src/llm/http-fetch';

describe('httpFetch', () => {
  let server: Server;
  let base: string;
  const sockets = new Set<Socket>();
  const closed: string[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => handler(req, res, body));
      res.on('close', () => !res.writableFinished && closed.push(req.url ?? ''));
    });
    server.on('connection', (s: Socket) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends method, headers and body; answers status, headers, url and the body; reuses one kept-alive socket', async () => {
    handler = (req, res, body) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req-1' });
      res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, got: JSON.parse(body) }));
    };
    sockets.clear();
    for (let i = 0; i < 3; i++) {
      const r = await httpFetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: new Headers({ authorization: 'Bearer k', 'content-type': 'application/json' }),
        body: JSON.stringify({ n: i, text: 'é' }),
      });
      expect(r.status).toBe(201);
      expect(r.ok).toBe(true);
      expect(r.url).toBe(`${base}/v1/chat/completions`);
      expect(r.headers.get('x-request-id')).toBe('req-1');
      expect(await r.json()).toEqual({ method: 'POST', auth: 'Bearer k', got: { n: i, text: 'é' } });
    }
    expect(sockets.size).toBe(1);
  });

  it('hands an event stream over as it arrives', async () => {
    let finish!: () => void;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      finish = () => res.end('data: two\n\n');
    };
    const r = await httpFetch(`${base}/stream`, { method: 'POST', body: '{}' });
    const reader = r.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: one\n\n');
    finish();
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toBe('data: two\n\n');
  });

  it('an abort rejects with an AbortError and closes the connection the server was answering on', async () => {
    handler = () => undefined; // never answers
    const controller = new AbortController();
    const pending = httpFetch(`${base}/slow`, { method: 'POST', body: '{}', signal: controller.signal });
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toContain('/slow');
  });

  it('a refused connection rejects as fetch does: a TypeError whose cause carries the socket code', async () => {
    const unused = createServer();
    await new Promise<void>((r) => unused.listen(0, '127.0.0.1', r));
    const port = (unused.address() as AddressInfo).port;
    await new Promise<void>((r) => unused.close(() => r()));
    const err = await httpFetch(`http://127.0.0.1:${port}/`, { method: 'GET' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
  });

  it('answers a 204 without a body', async () => {
    handler = (_req, res) => {
      res.writeHead(204);
      res.end();
    };
    const r = await httpFetch(`${base}/empty`, { method: 'DELETE' });
    expect(r.status).toBe(204);
    expect(await r.text()).toBe('');
  });
});
