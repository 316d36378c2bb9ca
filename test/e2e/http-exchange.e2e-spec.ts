/**
 * The model transport (src/llm/http-exchange.ts) against a real HTTP server: a whole answer, an
 * event stream read event by event as it arrives (split anywhere, CRLF, several data lines,
 * `[DONE]`), kept-alive sockets reused after a stream, an error status read whole, and every way a
 * call ends early: a stall, an abort, a refused connection, a stream cut mid-way, an oversize line.
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { exchange, ExchangeOptions, ModelCallAbortedError, ModelConnectionError, ModelTimeoutError, openEventStream } from '../../src/llm/http-exchange';

describe('model transport (http-exchange)', () => {
  let server: Server;
  let base: string;
  const sockets = new Set<Socket>();
  const closed: string[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse, body: string) => void;
  const post = (o: Partial<ExchangeOptions> = {}): ExchangeOptions => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeoutMs: 5_000,
    ...o,
  });

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

  async function drain(events: AsyncIterable<string[]>): Promise<string[]> {
    const seen: string[] = [];
    for await (const batch of events) seen.push(...batch);
    return seen;
  }

  it('sends method, headers and body; answers status, headers and the whole body; reuses one kept-alive socket', async () => {
    handler = (req, res, body) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req-1' });
      res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, got: JSON.parse(body) }));
    };
    sockets.clear();
    for (let i = 0; i < 3; i++) {
      const r = await exchange(
        new URL(`${base}/v1/chat/completions`),
        post({ headers: { authorization: 'Bearer k' }, body: JSON.stringify({ n: i, text: 'é' }) }),
      );
      expect(r.status).toBe(201);
      expect(r.headers['x-request-id']).toBe('req-1');
      expect(JSON.parse(r.body.toString())).toEqual({ method: 'POST', auth: 'Bearer k', got: { n: i, text: 'é' } });
    }
    expect(sockets.size).toBe(1);
  });

  it('reads an event stream event by event as it arrives, however its bytes are split', async () => {
    let finish!: () => void;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n: a comment\nevent: x\nid: 7\n');
      finish = () => {
        // an event split mid-line and mid-character, CRLF endings, two data lines, no space after the colon
        const rest = Buffer.from('data: tw\u00e9\r\n\r\ndata:three\ndata: lines\n\ndata: [DONE]\n\n');
        const cut = rest.indexOf(0xa9); // the second byte of é
        res.write(rest.subarray(0, 8));
        res.write(rest.subarray(8, cut));
        setTimeout(() => res.end(rest.subarray(cut)), 20);
      };
    };
    const r = await openEventStream(new URL(`${base}/stream`), post());
    expect(r.status).toBe(200);
    const it = r.events![Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: ['one'], done: false });
    finish();
    const rest: string[] = [];
    for (let e = await it.next(); !e.done; e = await it.next()) rest.push(...e.value);
    expect(rest).toEqual(['twé', 'three\nlines']);
  });

  it('hands over the events one read completed as one batch; what comes while a batch waits comes with the next', async () => {
    let more!: () => void;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4');
      more = () => res.end('\n\ndata: 5\n\ndata: [DONE]\n\n');
    };
    const r = await openEventStream(new URL(`${base}/burst`), post());
    const it = r.events![Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: ['1', '2', '3'], done: false });
    more();
    // Not taken yet (the response is paused meanwhile): the rest comes whole with the next batch.
    await new Promise((r) => setTimeout(r, 50));
    expect(await it.next()).toEqual({ value: ['4', '5'], done: false });
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });

  it('ends the events at [DONE] yet reads the body to its end, so the socket serves the next call', async () => {
    const used = new Set<Socket>();
    handler = (req, res) => {
      used.add(req.socket);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"a":1}\n\ndata: [DONE]\n\ndata: after\n\n');
    };
    for (let i = 0; i < 3; i++) expect(await drain((await openEventStream(new URL(`${base}/s`), post())).events!)).toEqual(['{"a":1}']);
    expect(used.size).toBe(1);
  });

  it('answers an error status with its whole body and no events', async () => {
    handler = (_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
      res.end('{"error":{"message":"slow down"}}');
    };
    const r = await openEventStream(new URL(`${base}/s`), post());
    expect(r.status).toBe(429);
    expect(r.events).toBeUndefined();
    expect(r.headers['retry-after']).toBe('3');
    expect(r.body.toString()).toContain('slow down');
  });

  it('fails a stream silent for the timeout, after the events that came, and drops the connection', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n'); // then nothing
    };
    const seen: string[] = [];
    const started = Date.now();
    const err = await (async () => {
      for await (const batch of (await openEventStream(new URL(`${base}/stall`), post({ timeoutMs: 300 }))).events!) seen.push(...batch);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['first']);
    expect(err).toBeInstanceOf(ModelTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toContain('/stall');
  });

  it('keeps a slow stream whose every silence is shorter than the timeout', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = setInterval(() => {
        if (++n <= 4) return void res.write(`data: ${n}\n\n`);
        clearInterval(tick);
        res.end();
      }, 150);
    };
    expect(await drain((await openEventStream(new URL(`${base}/slow`), post({ timeoutMs: 400 }))).events!)).toEqual(['1', '2', '3', '4']);
  });

  it('an abort, before the answer or during the stream, rejects as aborted and closes the connection', async () => {
    handler = () => undefined; // never answers
    const before = new AbortController();
    const pending = openEventStream(new URL(`${base}/never`), post({ signal: before.signal }));
    await new Promise((r) => setTimeout(r, 100));
    before.abort();
    await expect(pending).rejects.toBeInstanceOf(ModelCallAbortedError);

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    };
    const during = new AbortController();
    const r = await openEventStream(new URL(`${base}/during`), post({ signal: during.signal }));
    const err = await (async () => {
      for await (const _ of r.events!) during.abort();
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelCallAbortedError);
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toEqual(expect.arrayContaining(['/never', '/during']));
  });

  it('a stream cut mid-way fails with a connection error, after the events that came', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\ndata: tw');
      setTimeout(() => res.socket?.destroy(), 30);
    };
    const seen: string[] = [];
    const err = await (async () => {
      for await (const batch of (await openEventStream(new URL(`${base}/cut`), post())).events!) seen.push(...batch);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['one']);
    expect(err).toBeInstanceOf(ModelConnectionError);
  });

  it('a reader that stops early drops the connection rather than leave it mid-answer for the next call', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\ndata: two\n\n');
    };
    for await (const _ of (await openEventStream(new URL(`${base}/early`), post())).events!) break;
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toContain('/early');
  });

  it('a line longer than the limit fails the stream and drops the connection', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const mib = 'x'.repeat(1024 * 1024);
      let n = 0;
      const more = () => {
        while (n++ < 12) if (!res.write(mib)) return void res.once('drain', more);
      };
      more();
    };
    const err = await drain((await openEventStream(new URL(`${base}/huge`), post())).events!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelConnectionError);
    expect((err as Error).message).toMatch(/exceeded/);
  });

  it('a refused connection rejects with a connection error whose cause carries the socket code', async () => {
    const unused = createServer();
    await new Promise<void>((r) => unused.listen(0, '127.0.0.1', r));
    const port = (unused.address() as AddressInfo).port;
    await new Promise<void>((r) => unused.close(() => r()));
    for (const call of [exchange, openEventStream]) {
      const err = await call(new URL(`http://127.0.0.1:${port}/`), post()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelConnectionError);
      expect((err as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    }
  });
});
