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

/**
 * Just enough of an Express response to watch what the stream writes. While its socket is corked,
 * writes are held back until uncorked; ending the response sends them first, as Node's end() does.
 */
class FakeResponse extends EventEmitter {
  headersSent = false;
  statusCode = 0;
  headers: Record<string, string> = {};
  written = '';
  ended = false;
  locals: Record<string, unknown> = {};
  corks = 0;
  held = '';
  socket = {
    cork: () => void this.corks++,
    uncork: () => {
      if (this.corks > 0 && --this.corks === 0) this.release();
    },
  };
  private release() {
    this.written += this.held;
    this.held = '';
  }
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
    if (this.corks) this.held += s;
    else this.written += s;
    return true;
  }
  end() {
    this.corks = 0;
    this.release();
    this.ended = true;
  }
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('SseStream', () => {
  const make = (keepaliveMs = 0) => {
    const res = new FakeResponse();
    return { res, stream: new SseStream(res as unknown as Response, keepaliveMs) };
  };

  it('commits nothing on start(): the first event sends the SSE headers with it', async () => {
    const { res, stream } = make();
    stream.start();
    expect(res.headersSent).toBe(false);
    stream.send('partial-response', { x: 1 });
    await nextTick();
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

  it('data() writes a frame with no event name, opening the stream; stop() writes nothing more and leaves the response open', async () => {
    const { res, stream } = make(10_000);
    stream.data('{"a":1}');
    await nextTick();
    expect(res.statusCode).toBe(200);
    expect(res.written).toBe('data: {"a":1}\n\n');
    stream.stop();
    stream.data('[DONE]');
    stream.comment('keepalive');
    expect(res.written).toBe('data: {"a":1}\n\n');
    expect(res.ended).toBe(false);
    expect(stream.isOpen).toBe(false);
  });

  it('sends the frames of one tick in one write, at the next tick', async () => {
    const { res, stream } = make();
    stream.send('partial-response', { n: 1 });
    stream.send('partial-response', { n: 2 });
    stream.data('{"n":3}');
    expect(res.written).toBe('');
    await nextTick();
    expect(res.written).toBe('event: partial-response\ndata: {"n":1}\n\nevent: partial-response\ndata: {"n":2}\n\ndata: {"n":3}\n\n');
    expect(res.corks).toBe(0);
  });

  it('sends the frames of the tick it ends or stops in', async () => {
    const ended = make();
    ended.stream.send('partial-response', { n: 1 });
    ended.stream.send('final-response', { n: 2 });
    ended.stream.end();
    expect(ended.res.written).toBe('event: partial-response\ndata: {"n":1}\n\nevent: final-response\ndata: {"n":2}\n\n');
    expect(ended.res.ended).toBe(true);

    // An error filter writes the last frame itself after stop(), then ends the response.
    const stopped = make();
    stopped.stream.send('partial-response', { n: 1 });
    stopped.stream.stop();
    expect(stopped.res.written).toBe('event: partial-response\ndata: {"n":1}\n\n');
    await nextTick();
    expect(stopped.res.corks).toBe(0);
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

  it('openWithin(): the headers leave with a frame sent in time, in the same write', async () => {
    const { res, stream } = make(1000);
    // Flushed while the socket is corked for the frame, the headers leave with it (as Node sends them).
    const corkedAtFlush: number[] = [];
    const flush = res.flushHeaders.bind(res);
    res.flushHeaders = () => (corkedAtFlush.push(res.corks), flush());
    stream.openWithin(50);
    expect(res.headersSent).toBe(false);
    stream.send('partial-response', { x: 1 });
    await nextTick();
    expect(corkedAtFlush).toEqual([1]);
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toBe('text/event-stream; charset=utf-8');
    expect(res.written).toBe('event: partial-response\ndata: {"x":1}\n\n');
    // The headers' timer became the keepalive: nothing more is sent at 50 ms.
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(res.written).toBe('event: partial-response\ndata: {"x":1}\n\n');
    expect(corkedAtFlush).toEqual([1]);
    stream.end();
  });

  it('openWithin(): after that long a silence the headers go alone, and the keepalive runs from there', async () => {
    const { res, stream } = make(40);
    const flushed = jest.spyOn(res, 'flushHeaders');
    stream.openWithin(10);
    await new Promise((resolve) => setTimeout(resolve, 25));
    expect(flushed).toHaveBeenCalledTimes(1);
    expect(res.statusCode).toBe(200);
    expect(res.written).toBe('');
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(res.written).toContain(': keepalive\n\n');
    stream.end();
  });

  it('openWithin(): ending before any frame still answers an (empty) event stream, not a bare 200', () => {
    const { res, stream } = make(1000);
    const flushed = jest.spyOn(res, 'flushHeaders');
    stream.openWithin(1000);
    stream.end();
    expect(res.ended).toBe(true);
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toBe('text/event-stream; charset=utf-8');
    expect(flushed).not.toHaveBeenCalled();
  });

  it('openWithin(): a client gone before the headers stops their timer', async () => {
    const { res, stream } = make(1000);
    const flushed = jest.spyOn(res, 'flushHeaders');
    stream.openWithin(10);
    res.emit('close');
    await new Promise((resolve) => setTimeout(resolve, 25));
    expect(flushed).not.toHaveBeenCalled();
    expect(stream.signal.aborted).toBe(true);
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
