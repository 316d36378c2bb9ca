import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Request bodies are read by two readers (src/common/http/json-body.middleware.ts): our own for a
 * plain JSON body (application/json or no type, UTF-8, not compressed, with a content-length),
 * body-parser for every other. Both must answer alike: the same bodies served, the same refused
 * with the same problem. Each case below is sent both ways where both can take it.
 */
const MAX_BODY = 4096;
const HELLO = { chat_history: [{ role: 'user', content: 'hello there' }] };

interface Answer {
  status: number;
  code?: string;
  output?: string;
}

function post(url: string, body: Buffer | string, headers: Record<string, string>, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const all = chunked ? { ...headers, 'transfer-encoding': 'chunked' } : { ...headers, 'content-length': String(bytes.length) };
    const req = httpRequest(url, { method: 'POST', headers: all }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const parsed = JSON.parse(text) as { code?: string; output_raw?: string };
        resolve({ status: res.statusCode!, ...(parsed.code ? { code: parsed.code } : {}), ...(parsed.output_raw ? { output: parsed.output_raw } : {}) });
      });
    });
    req.on('error', reject);
    if (chunked) {
      // Two chunks, so the body really is read as a stream of them.
      req.write(bytes.subarray(0, bytes.length >> 1));
      req.end(bytes.subarray(bytes.length >> 1));
    } else req.end(bytes);
  });
}

describe('request bodies: our plain JSON reader and body-parser answer alike', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents'), env: { TA_MAX_BODY_BYTES: String(MAX_BODY) } });
    url = `${t.url}/EchoAgent/0.1`;
  });
  afterAll(() => t.close());

  const served: Answer = { status: 200, output: 'hello there' };
  const ways = [
    ['with a content-length (our reader)', false],
    ['chunked (body-parser)', true],
  ] as const;

  describe.each(ways)('%s', (_way, chunked) => {
    it.each([
      ['application/json', served],
      ['application/json; charset=utf-8', served],
      ['APPLICATION/JSON; Charset="UTF-8"', served],
      ['', served],
    ])('a JSON body sent as %j is served', async (type, expected) => {
      expect(await post(url, JSON.stringify(HELLO), type ? { 'content-type': type } : {}, chunked)).toEqual(expected);
    });

    it('a body with a byte order mark is served (the mark dropped)', async () => {
      const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(HELLO))]);
      expect(await post(url, body, { 'content-type': 'application/json' }, chunked)).toEqual(served);
    });

    it('non-ASCII text split anywhere is read whole', async () => {
      const text = 'héllo ☃ 🚀 wörld';
      const expected = { status: 200, output: text };
      expect(await post(url, JSON.stringify({ chat_history: [{ role: 'user', content: text }] }), { 'content-type': 'application/json' }, chunked)).toEqual(
        expected,
      );
    });

    it.each(['"text"', 'null', '   ', '{"chat_history": [', '{"a":1}trailing', "{'single': 'quotes'}"])('%j is 415 MALFORMED_JSON', async (raw) => {
      expect(await post(url, raw, { 'content-type': 'application/json' }, chunked)).toEqual({ status: 415, code: 'MALFORMED_JSON' });
    });

    it('an empty body reads as {} (an Echo request with no history: served)', async () => {
      expect(await post(url, '', { 'content-type': 'application/json' }, chunked)).toEqual({ status: 200 });
    });

    it('JSON nested deeper than 64 levels is 422, before it is parsed', async () => {
      const deep = `{"chat_history":${'['.repeat(70)}${']'.repeat(70)}}`;
      expect(await post(url, deep, { 'content-type': 'application/json' }, chunked)).toEqual({ status: 422, code: 'VALIDATION_FAILED' });
    });

    it('a body over TA_MAX_BODY_BYTES is 413, one at the limit is served', async () => {
      const over = JSON.stringify({ chat_history: [{ role: 'user', content: 'x'.repeat(MAX_BODY) }] });
      expect(await post(url, over, { 'content-type': 'application/json' }, chunked)).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
      const base = JSON.stringify({ chat_history: [{ role: 'user', content: '' }] });
      const fits = JSON.stringify({ chat_history: [{ role: 'user', content: 'y'.repeat(MAX_BODY - base.length) }] });
      expect(Buffer.byteLength(fits)).toBe(MAX_BODY);
      expect((await post(url, fits, { 'content-type': 'application/json' }, chunked)).status).toBe(200);
    });
  });

  it('a gzip-compressed body is read by body-parser and served', async () => {
    const body = gzipSync(JSON.stringify(HELLO));
    expect(await post(url, body, { 'content-type': 'application/json', 'content-encoding': 'gzip' })).toEqual(served);
  });

  it('a charset other than UTF-8 is 415 (body-parser, as before)', async () => {
    const answer = await post(url, JSON.stringify(HELLO), { 'content-type': 'application/json; charset=latin1' });
    expect(answer.status).toBe(415);
  });

  it('application/*+json is read by body-parser and served', async () => {
    expect(await post(url, JSON.stringify(HELLO), { 'content-type': 'application/vnd.teal+json' })).toEqual(served);
  });

  it('a client that stops mid-body leaves the server serving the next request', async () => {
    await new Promise<void>((resolve) => {
      const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '1000' } });
      req.on('error', () => resolve());
      req.write('{"chat_history": [');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    expect(await post(url, JSON.stringify(HELLO), { 'content-type': 'application/json' })).toEqual(served);
  });
});
