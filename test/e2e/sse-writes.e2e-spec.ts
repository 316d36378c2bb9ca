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

  beforeAll(async () => {
    const app = express();
    app.post('/sse', (_req, res) => {
      // Count what the socket is asked to send (one call per write or writev system call).
      const socket = res.socket as Socket & { _writeGeneric: (...args: unknown[]) => unknown };
      const send = socket._writeGeneric.bind(socket);
      socket._writeGeneric = (...args: unknown[]) => {
        writes++;
        return send(...args);
      };
      script(new SseStream(res, 0));
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

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
});
