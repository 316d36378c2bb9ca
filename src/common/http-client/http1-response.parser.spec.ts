import { Http1ParseError, Http1ResponseParser, MAX_HEAD_BYTES, ResponseHead } from './http1-response.parser';

interface Read {
  heads: ResponseHead[];
  /** The body's bytes so far, as UTF-8. */
  readonly body: string;
  ended: number;
  parser: Http1ResponseParser;
}

/** Feeds `text` to a parser in pieces of `step` bytes (0: all at once). */
function read(text: string | Buffer, step = 0): Read {
  const chunks: Buffer[] = [];
  const out: Read = {
    heads: [],
    get body() {
      return Buffer.concat(chunks).toString('utf8');
    },
    ended: 0,
    parser: undefined!,
  };
  out.parser = new Http1ResponseParser({ head: (h) => out.heads.push(h), body: (b) => chunks.push(Buffer.from(b)), end: () => out.ended++ });
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1');
  if (step === 0) out.parser.push(bytes);
  else for (let at = 0; at < bytes.length; at += step) out.parser.push(bytes.subarray(at, at + step));
  return out;
}

const CHUNKED =
  'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Twice: 1\r\nx-twice: 2\r\n\r\n' +
  '8;ext=1\r\ndata: 1\n\r\n' +
  'a\r\n\ndata: 22\n\r\n' +
  '0\r\nX-Trailer: t\r\n\r\n';

describe('Http1ResponseParser', () => {
  it('reads a chunked answer split at every byte alike: status, headers (lower-cased, repeats joined, cookies listed), body, end', () => {
    for (const step of [0, 1, 2, 3, 5, 7, 13]) {
      const r = read(CHUNKED, step);
      expect(r.heads).toHaveLength(1);
      const { status, keepAlive, headers } = r.heads[0]!;
      expect({ status, keepAlive, headers }).toEqual({
        status: 200,
        keepAlive: true,
        headers: { 'content-type': 'text/event-stream', 'transfer-encoding': 'chunked', 'set-cookie': ['a=1', 'b=2'], 'x-twice': '1, 2' },
      });
      // Made once, on first use.
      expect(r.heads[0]!.headers).toBe(headers);
      expect(r.body).toBe('data: 1\n\ndata: 22\n');
      expect(r.ended).toBe(1);
      expect(r.parser.reusable).toBe(true);
    }
  });

  it('ends a chunked answer without trailers, and one whose last CRLF comes alone', () => {
    const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n';
    const r = read(`${head}\r\n`);
    expect([r.body, r.ended, r.parser.reusable]).toEqual(['abc', 1, true]);
    const parts = read(head);
    expect(parts.ended).toBe(0);
    parts.parser.push(Buffer.from('\r'));
    expect(parts.ended).toBe(0);
    parts.parser.push(Buffer.from('\n'));
    expect(parts.ended).toBe(1);
  });

  it('reads a body of Content-Length bytes (multi-byte characters split anywhere) and nothing beyond', () => {
    const json = JSON.stringify({ text: 'héllo ✈ wörld' });
    const answer = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n`), Buffer.from(json)]);
    for (const step of [0, 1, 4]) {
      const r = read(answer, step);
      expect(r.body).toBe(json);
      expect(r.ended).toBe(1);
      expect(r.parser.reusable).toBe(true);
    }
    // Repeated identical lengths are one length; a zero length ends at the head.
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok').body).toBe('ok');
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').ended).toBe(1);
  });

  it('marks the connection not reusable for Connection: close, HTTP/1.0 without keep-alive, a body read to the end, or bytes after the answer', () => {
    expect(read('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx').parser.reusable).toBe(false);
    expect(read('HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx').parser.reusable).toBe(false);
    expect(read('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx').parser.reusable).toBe(true);
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxy').parser.reusable).toBe(false);
    // No length, not chunked: the body is whatever comes until the connection ends.
    const untilClose = read('HTTP/1.1 200 OK\r\n\r\npart one, ');
    untilClose.parser.push(Buffer.from('part two'));
    expect(untilClose.ended).toBe(0);
    expect(untilClose.parser.end()).toBe(true);
    expect([untilClose.body, untilClose.ended, untilClose.parser.reusable]).toEqual(['part one, part two', 1, false]);
  });

  it('skips interim answers (100, 103) and reads the real one after them', () => {
    const r = read('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok', 3);
    expect(r.heads.map((h) => h.status)).toEqual([201]);
    expect(r.body).toBe('ok');
  });

  it('answers 204 and 304 without a body', () => {
    for (const status of [204, 304]) {
      const r = read(`HTTP/1.1 ${status} X\r\nContent-Length: 10\r\n\r\n`);
      expect([r.heads[0]!.status, r.body, r.ended, r.parser.reusable]).toEqual([status, '', 1, true]);
    }
  });

  it('reports an answer cut short: end() is false unless the body is read to the connection end', () => {
    const r = read('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
    expect(r.parser.started).toBe(true);
    expect(r.parser.end()).toBe(false);
    const none = read('HTTP/1.1 200 O');
    expect(none.parser.started).toBe(false);
    expect(none.parser.end()).toBe(false);
  });

  it.each([
    ['a status line that is not HTTP/1.x', 'HTTP/2 200\r\n\r\n'],
    ['garbage', 'hello there\r\n\r\n'],
    ['a header line without a name', 'HTTP/1.1 200 OK\r\n: x\r\n\r\n'],
    ['a header name with a space', 'HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n'],
    ['a folded header line', 'HTTP/1.1 200 OK\r\nA: 1\r\n  more\r\n\r\n'],
    ['an invalid content-length', 'HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n'],
    ['two different content-lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n'],
    ['an invalid chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['a chunk without its CRLF', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXY'],
    ['a switch of protocols', 'HTTP/1.1 101 Switching Protocols\r\n\r\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => read(text)).toThrow(Http1ParseError);
  });

  it(`refuses a head beyond ${MAX_HEAD_BYTES} bytes, whole or in pieces`, () => {
    const big = `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`;
    expect(() => read(big)).toThrow(/head exceeded/);
    expect(() => read(big, 1000)).toThrow(/head exceeded/);
  });

  it('reads a chunked body whose coding list ends in chunked; any other coding to the connection end, not reused', () => {
    expect(read('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n').body).toBe('x');
    const other = read('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw');
    expect(other.parser.end()).toBe(true);
    expect([other.body, other.parser.reusable]).toEqual(['raw', false]);
    // A length beside chunked is ignored, and the connection not reused.
    const both = read('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n1\r\nx\r\n0\r\n\r\n');
    expect([both.body, both.ended, both.parser.reusable]).toEqual(['x', 1, false]);
  });
});
