import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { formatSseComment, formatSseEvent, SseStream } from './sse-stream';

describe('SSE wire format', () => {
  it('frames an event as upstream does: event line, one data line of compact JSON, blank line', () => {
    expect(formatSseEvent('partial-response', { a: 1, b: 'x' })).toBe('event: partial-response\ndata: {"a":1,"b":"x"}\n\n');
  });

  it('puts the id first when given, and splits multi-line text over data lines', () => {
    expect(formatSseEvent('note', 'one\ntwo', '7')).toBe('id: 7\nevent: note\ndata: one\ndata: two\n\n');
  });

  it('writes comments as ": text"', () => {
    expect(formatSseComment('keepalive')).toBe(': keepalive\n\n');
  });
});

/** Just enough of an Express response to watch what the stream writes. */
class FakeResponse extends EventEmitter {
  headersSent = false;
  statusCode = 0;
  headers: Record<string, string> = {};
  written = '';
  ended = false;
  locals: Record<string, unknown> = {};
  status(code: number) {
    this.statusCode = code;
    return this;
  }
  setHeader(k: string, v: string) {
    this.headers[k] = v;
  }
  flushHeaders() {
    this.headersSent = true;
  }
  write(s: string) {
    this.headersSent = true;
    this.written += s;
    return true;
  }
  end() {
    this.ended = true;
  }
}

describe('SseStream', () => {
  const make = (keepaliveMs = 0) => {
    const res = new FakeResponse();
    return { res, stream: new SseStream(res as unknown as Response, keepaliveMs) };
  };

  it('commits nothing on start(): the first event sends the SSE headers with it', () => {
    const { res, stream } = make();
    stream.start();
    expect(res.headersSent).toBe(false);
    stream.send('partial-response', { x: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    expect(res.written).toBe('event: partial-response\ndata: {"x":1}\n\n');
  });

  it('release() before anything was sent hands the response back untouched', () => {
    const { res, stream } = make(10_000);
    stream.start();
    expect(SseStream.of(res as unknown as Response)).toBe(stream);
    expect(stream.release()).toBe(true);
    expect(SseStream.of(res as unknown as Response)).toBeUndefined();
    stream.comment('keepalive');
    expect(res.headersSent).toBe(false);
    expect(res.written).toBe('');
  });

  it('release() after the stream started refuses: the error must go inside the stream', () => {
    const { stream } = make();
    stream.send('partial-response', {});
    expect(stream.release()).toBe(false);
    expect(stream.isOpen).toBe(true);
  });

  it('data() writes a frame with no event name, opening the stream; stop() writes nothing more and leaves the response open', () => {
    const { res, stream } = make(10_000);
    stream.data('{"a":1}');
    expect(res.statusCode).toBe(200);
    expect(res.written).toBe('data: {"a":1}\n\n');
    stream.stop();
    stream.data('[DONE]');
    stream.comment('keepalive');
    expect(res.written).toBe('data: {"a":1}\n\n');
    expect(res.ended).toBe(false);
    expect(stream.isOpen).toBe(false);
  });

  it('aborts its signal when the client goes away, but not after a normal end', () => {
    const left = make();
    left.stream.start();
    left.res.emit('close');
    expect(left.stream.signal.aborted).toBe(true);
    expect(left.stream.isOpen).toBe(false);

    const done = make();
    done.stream.send('final-response', {});
    done.stream.end();
    done.res.emit('close');
    expect(done.stream.signal.aborted).toBe(false);
    expect(done.res.ended).toBe(true);
  });

  it('fills silences with keepalive comments, which also open the stream', async () => {
    const { res, stream } = make(5);
    stream.start();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (res.written.includes(': keepalive\n\n')) {
          clearInterval(check);
          resolve();
        }
      }, 1);
    });
    expect(res.statusCode).toBe(200);
    stream.end();
  });
});
