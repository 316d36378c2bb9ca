/**
 * The model transport (src/common/http-client/http-exchange.ts) against a real HTTP server: a whole answer, an
 * event stream read event by event as it arrives (split anywhere, CRLF, several data lines,
 * `[DONE]`), kept-alive sockets reused after a stream, an error status read whole, and every way a
 * call ends early: a stall, an abort, a refused connection, a stream cut mid-way, an oversize line.
 * The transport speaks HTTP/1.1 itself (http1-response.parser.ts, origin-sockets.ts), so the wire's
 * cases are here too: chunked and read-to-the-end answers, Connection: close, interim answers, a
 * socket the server closed while idle, malformed answers, header injection, TLS, the socket bound.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo, createServer as createTcpServer, Socket } from 'node:net';
import { getCACertificates, setDefaultCACertificates, TLSSocket } from 'node:tls';
import {
  exchange,
  ExchangeOptions,
  HttpCallAbortedError,
  HttpConnectionError,
  HttpTimeoutError,
  openEventStream,
} from '../../src/common/http-client/http-exchange';
import { OriginSockets } from '../../src/common/http-client/origin-sockets';
import { ensureBuilt } from '../support/built-cli';
import { selfSignedCert } from '../support/self-signed-cert';

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
    expect(err).toBeInstanceOf(HttpTimeoutError);
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
    await expect(pending).rejects.toBeInstanceOf(HttpCallAbortedError);

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
    };
    const during = new AbortController();
    const r = await openEventStream(new URL(`${base}/during`), post({ signal: during.signal }));
    const err = await (async () => {
      for await (const _ of r.events!) during.abort();
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpCallAbortedError);
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
    expect(err).toBeInstanceOf(HttpConnectionError);
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
    expect(err).toBeInstanceOf(HttpConnectionError);
    expect((err as Error).message).toMatch(/exceeded/);
  });

  it('a refused connection rejects with a connection error whose cause carries the socket code', async () => {
    const unused = createServer();
    await new Promise<void>((r) => unused.listen(0, '127.0.0.1', r));
    const port = (unused.address() as AddressInfo).port;
    await new Promise<void>((r) => unused.close(() => r()));
    for (const call of [exchange, openEventStream]) {
      const err = await call(new URL(`http://127.0.0.1:${port}/`), post()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HttpConnectionError);
      expect((err as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    }
  });

  it('reads a chunked answer whole, and one read to the connection end; a closed connection is not reused', async () => {
    handler = (req, res) => {
      if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"a":');
        setTimeout(() => res.end('1}'), 20);
        return;
      }
      // No length, not chunked: the body ends with the connection.
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.useChunkedEncodingByDefault = false;
      res.end('{"b":2}');
    };
    sockets.clear();
    const chunked = await exchange(new URL(`${base}/chunked`), post());
    expect([chunked.status, chunked.headers['transfer-encoding'], JSON.parse(chunked.body.toString())]).toEqual([200, 'chunked', { a: 1 }]);
    const toEnd = await exchange(new URL(`${base}/close`), post());
    expect(JSON.parse(toEnd.body.toString())).toEqual({ b: 2 });
    await exchange(new URL(`${base}/chunked`), post());
    // The first socket served two calls around the one the server closed: two in all.
    expect(sockets.size).toBe(2);
  });

  it('opens a new connection when the server closed the idle one, with no call failing', async () => {
    handler = (_req, res) => res.end('{}');
    // No socket idle from the calls before (they would serve this one): the server closes them.
    server.closeIdleConnections();
    await new Promise((r) => setTimeout(r, 100));
    sockets.clear();
    await exchange(new URL(`${base}/idle`), post());
    expect(sockets.size).toBe(1);
    // The server ends the idle connection (its keep-alive timeout, a restart).
    for (const s of sockets) s.end();
    await new Promise((r) => setTimeout(r, 100));
    expect((await exchange(new URL(`${base}/idle`), post())).status).toBe(200);
    expect(sockets.size).toBe(2);
  });

  it('skips an interim answer (103 Early Hints) and reads the real one', async () => {
    handler = (_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    };
    const r = await exchange(new URL(`${base}/hints`), post());
    expect([r.status, r.body.toString()]).toEqual([200, '{"ok":true}']);
  });

  it('refuses a header that would inject another, sending nothing', async () => {
    let reached = 0;
    handler = (_req, res) => {
      reached++;
      res.end('{}');
    };
    const err = await exchange(new URL(`${base}/inject`), post({ headers: { 'x-a': 'b\r\nx-evil: 1' } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toMatch(/Invalid character in header "x-a"/);
    // The socket stays fit for the next call, which goes through.
    expect((await exchange(new URL(`${base}/inject`), post())).status).toBe(200);
    expect(reached).toBe(1);
  });

  it('sends a headers object as it is at each call (one changed between calls sends its new value; a frozen one its own)', async () => {
    const seen: (string | undefined)[] = [];
    handler = (req, res) => {
      seen.push(req.headers['x-key'] as string | undefined);
      res.end('{}');
    };
    const url = new URL(`${base}/headers`);
    const mutable: Record<string, string> = { 'x-key': 'one' };
    await exchange(url, post({ headers: mutable }));
    mutable['x-key'] = 'two';
    await exchange(url, post({ headers: mutable }));
    const frozen = Object.freeze({ 'x-key': 'three' });
    await exchange(url, post({ headers: frozen }));
    await exchange(url, post({ headers: frozen }));
    expect(seen).toEqual(['one', 'two', 'three', 'three']);
  });

  it('fails an answer that is not HTTP, or is cut before its head ends, with a connection error', async () => {
    for (const [answer, message] of [
      ['SSH-2.0-OpenSSH_9.6\r\n\r\n', /^The answer was not valid HTTP: not an HTTP\/1\.x status line/],
      ['HTTP/1.1 20', /^The connection failed: socket hang up$/],
    ] as const) {
      const raw = createTcpServer((socket) => socket.once('data', () => socket.end(answer)));
      await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
      try {
        const err = await exchange(new URL(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`), post()).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(HttpConnectionError);
        expect((err as Error).message).toMatch(message);
      } finally {
        await new Promise<void>((r) => raw.close(() => r()));
      }
    }
  });

  it('holds calls beyond the socket bound until one is free, in order; a waiting call that times out leaves the queue', async () => {
    let open = 0;
    let most = 0;
    handler = (_req, res) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.end('{}');
      }, 50);
    };
    const url = new URL(`${base}/bound`);
    const pool = new OriginSockets(url, { max: 2, maxIdle: 1, idleMs: 1_000 });
    const order: number[] = [];
    const claims = Array.from(
      { length: 5 },
      (_, i) =>
        new Promise<void>((resolve) =>
          pool.claim((socket) => {
            order.push(i);
            socket.write(`POST /bound HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: 2\r\n\r\n{}`);
            socket.once('data', () => {
              pool.release(socket, false);
              resolve();
            });
          }),
        ),
    );
    const cancelled = pool.claim(() => order.push(99));
    expect(pool.counts()).toEqual({ open: 2, idle: 0, waiting: 4 });
    cancelled.cancel();
    await Promise.all(claims);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
    expect(pool.counts()).toEqual({ open: 0, idle: 0, waiting: 0 });
  });

  it('keeps at most maxIdle idle sockets and closes one idle for idleMs', async () => {
    handler = (_req, res) => res.end('{}');
    const url = new URL(`${base}/idle-bound`);
    const pool = new OriginSockets(url, { max: 4, maxIdle: 1, idleMs: 100 });
    const got: Socket[] = [];
    for (let i = 0; i < 2; i++) pool.claim((s) => got.push(s));
    await Promise.all(got.map((s) => new Promise((r) => s.once('connect', r))));
    pool.release(got[0]!, true);
    pool.release(got[1]!, true);
    expect(got[1]!.destroyed).toBe(true);
    expect(pool.counts()).toEqual({ open: 1, idle: 1, waiting: 0 });
    await new Promise((r) => setTimeout(r, 300));
    expect(got[0]!.destroyed).toBe(true);
    expect(pool.counts()).toEqual({ open: 0, idle: 0, waiting: 0 });
  });

  it('an idle kept-alive socket does not keep a process alive (a CLI run ends once its calls have)', async () => {
    handler = (_req, res) => res.end('{"ok":true}');
    ensureBuilt();
    const module = join(resolve(__dirname, '../..'), 'dist', 'common', 'http-client', 'http-exchange.js');
    const script = `require(${JSON.stringify(module)}).exchange(new URL(${JSON.stringify(`${base}/cli`)}), { method: 'POST', headers: {}, body: '{}', timeoutMs: 5000 }).then((r) => console.log(r.status))`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const started = Date.now();
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect([code, out.trim()]).toEqual([0, '200']);
    // Well before the 30 s an idle socket is kept (and the server's own 5 s keep-alive).
    expect(Date.now() - started).toBeLessThan(4_000);
  }, 120_000);

  describe('over HTTPS', () => {
    const trusted = getCACertificates('default');
    let tls: ReturnType<typeof createHttpsServer>;
    let port: number;
    const servernames: (string | false | null)[] = [];
    const tlsSockets = new Set<Socket>();
    beforeAll(async () => {
      const cert = selfSignedCert('localhost');
      // Trust what the process trusts plus the test's own certificate, for this file only.
      setDefaultCACertificates([...trusted, cert.cert]);
      tls = createHttpsServer(cert, (req, res) => {
        servernames.push((req.socket as TLSSocket).servername);
        req.resume();
        req.on('end', () => res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: a\n\ndata: [DONE]\n\n'));
      });
      tls.on('secureConnection', (s: Socket) => tlsSockets.add(s));
      await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
      port = (tls.address() as AddressInfo).port;
    });
    afterAll(async () => {
      setDefaultCACertificates(trusted);
      tls.closeAllConnections();
      await new Promise<void>((r) => tls.close(() => r()));
    });

    it('sends the host name as SNI, checks the certificate against it, and keeps the connection alive', async () => {
      const url = new URL(`https://localhost:${port}/v1/chat/completions`);
      for (let i = 0; i < 2; i++) {
        const answer = await openEventStream(url, post());
        expect(await drain(answer.events!)).toEqual(['a']);
        expect(answer.status).toBe(200);
      }
      expect(servernames).toEqual(['localhost', 'localhost']);
      expect(tlsSockets.size).toBe(1);
      // The same server under its address, which the certificate does not name: refused by TLS.
      const refused = await exchange(new URL(`https://127.0.0.1:${port}/v1/chat/completions`), post()).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(HttpConnectionError);
      expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      expect(servernames).toHaveLength(2);
    });
  });
});
