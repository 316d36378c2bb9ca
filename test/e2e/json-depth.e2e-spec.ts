/**
 * JSON nested deeper than MAX_JSON_DEPTH (64) is refused before it is parsed — on an HTTP body and on
 * the WebSocket /stream first message — also when the deep part is a field nobody reads. 5,000
 * levels used to end as a 500 with a stack in the log.
 */
import { join } from 'node:path';
import { MAX_JSON_DEPTH } from '../../src/common/http/json-depth';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';
import { streamSocket, wsUrl } from '../support/ws-client';

const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
/** A valid input whose ignored field `extra` nests the whole body `depth` levels deep. */
const body = (depth: number) => `{"extra":${nested(depth - 1)},"chat_history":[{"role":"user","items":[{"content_type":"text","content":"hi"}]}]}`;

describe('JSON nesting limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents') });
  });
  afterAll(() => t?.close());

  const post = (raw: string) => request(`${t.url}/EchoAgent/0.1`, { method: 'POST', rawBody: raw, headers: { 'content-type': 'application/json' } });

  it('takes a body exactly at the limit', async () => {
    const res = await post(body(MAX_JSON_DEPTH));
    expect(res.status).toBe(200);
  });

  it.each([MAX_JSON_DEPTH + 1, 5_000, 100_000])('refuses a body %i levels deep with 422 naming the limit, and logs no stack', async (depth) => {
    const res = await post(body(depth));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field: 'body', message: expect.stringContaining(`${MAX_JSON_DEPTH} levels`) }] });
    expect(t.rawLogs()).not.toMatch(/"stack"|RangeError|Maximum call stack/);
  });

  it('does not count brackets inside strings', async () => {
    const res = await post(`{"extra":"${nested(5_000)}","chat_history":[{"role":"user","items":[{"content_type":"text","content":"[[\\"{{"}]}]}`);
    expect(res.status).toBe(200);
  });

  it('closes the WebSocket /stream with 1007 on a first message over the limit', async () => {
    const out = await streamSocket(`${wsUrl(t.url)}/EchoAgent/0.1/stream`, body(5_000));
    expect(out.frames).toEqual([]);
    expect(out.code).toBe(1007);
    expect(out.reason).toMatch(/^VALIDATION_FAILED: /);
    expect(t.rawLogs()).not.toMatch(/"stack"|RangeError|Maximum call stack/);
  });
});
