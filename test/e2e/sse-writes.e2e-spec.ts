/**
 * SseStream over a real socket (src/common/sse/sse-stream.ts): frames written in one tick leave in
 * one socket write with the headers, whatever ends the tick, and none is lost when the response ends
 * in the same tick as its last frames. Counted at the socket, read back by a real HTTP client.
 */
import express from 'express';
import { Server } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { SseStream } from '../../src/common/sse/sse-stream';

describe('SseStream on a real socket', () => {
  let server: Server;
  let base: string;
  let writes: number;
  let script: (stream: SseStream) => void;
  const counted = new WeakSet<Socket>();

  beforeAll(async () => {
    const app = express();
    app.post('/sse', (_req, res) => {
      // Count what the socket is asked to send (one call per write or writev system call), once per
      // socket: a kept-alive connection serves the next test too.
      const socket = res.socket as Socket & { _writeGeneric: (...args: unknown[]) => unknown };
      if (!counted.has(socket)) {
        counted.add(socket);
        const send = socket._writeGeneric.bind(socket);
        socket._writeGeneric = (...args: unknown[]) => {
          writes++;
          return send(...args);
        };
      }
      script(new SseStream(res, 0));
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });

  const read = async () => {
    writes = 0;
    const res = await fetch(`${base}/sse`, { method: 'POST' });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };
  const frames = (...ns: number[]) => ns.map((n) => `event: partial-response\ndata: {"n":${n}}\n\n`).join('');

  it('three frames and the end in one tick: all arrive, in two socket writes (headers and frames, then the last chunk)', async () => {
    script = (s) => {
      s.send('partial-response', { n: 1 });
      s.send('partial-response', { n: 2 });
      s.send('partial-response', { n: 3 });
      s.end();
    };
    const got = await read();
    expect(got).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', text: frames(1, 2, 3) });
    expect(writes).toBeLessThanOrEqual(2);
  });

  it('frames over several ticks: each tick one write, nothing lost at the end', async () => {
    script = (s) => {
      s.send('partial-response', { n: 1 });
      s.send('partial-response', { n: 2 });
      setTimeout(() => {
        s.send('partial-response', { n: 3 });
        s.send('partial-response', { n: 4 });
        setTimeout(() => {
          s.send('partial-response', { n: 5 });
          s.end();
        }, 5);
      }, 5);
    };
    const got = await read();
    expect(got.text).toBe(frames(1, 2, 3, 4, 5));
    expect(writes).toBeLessThanOrEqual(4);
  });

  // How a v3 stream opens (src/api/v3/v3-event-stream.ts): open() would send the headers in a write of their own.
  it('openWithin(): first frames a few ticks later leave with the headers, in one write', async () => {
    script = (s) => {
      s.openWithin(1000);
      setTimeout(() => {
        s.send('partial-response', { n: 1 });
        s.send('partial-response', { n: 2 });
        setTimeout(() => s.end(), 5);
      }, 5);
    };
    const got = await read();
    expect(got).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', text: frames(1, 2) });
    expect(writes).toBe(2);
  });

  it('openWithin(): a silence longer than that sends the headers alone, and the client sees its 200 before any frame', async () => {
    let sendLater!: () => void;
    script = (s) => {
      s.openWithin(10);
      sendLater = () => {
        s.send('partial-response', { n: 1 });
        s.end();
      };
    };
    writes = 0;
    const res = await fetch(`${base}/sse`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(writes).toBe(1);
    sendLater();
    expect(await res.text()).toBe(frames(1));
  });

  it('openWithin(): ended before any frame, an empty event stream in one write', async () => {
    script = (s) => {
      s.openWithin(1000);
      s.end();
    };
    expect(await read()).toEqual({ status: 200, type: 'text/event-stream; charset=utf-8', text: '' });
    expect(writes).toBe(1);
  });
});
