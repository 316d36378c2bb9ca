import { Controller, Get, Module, Post, Res } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Response } from 'express';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { LOGGER, TELEMETRY } from '../../src/app.tokens';
import { ProblemDetailsFilter } from '../../src/common/errors/problem-details.filter';
import { requestIdMiddleware } from '../../src/common/http/request-id.middleware';
import { createLogger } from '../../src/common/logging/logger';
import { httpTelemetryMiddleware } from '../../src/telemetry/http-telemetry.middleware';
import { activeTraceIds, Telemetry } from '../../src/telemetry/telemetry';
import { TelemetryInterceptor } from '../../src/telemetry/telemetry.interceptor';
import { JsonResponse, postJson, request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

const PROBLEM_KEYS = ['type', 'title', 'status', 'detail', 'instance', 'code'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_BODY = 2048;

function expectProblem(res: JsonResponse, status: number, code: string, instance: string) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  for (const key of PROBLEM_KEYS) expect(res.body).toHaveProperty(key);
  expect(res.body).toMatchObject({ status, code, instance });
  expect(res.body.type).toMatch(/^urn:teal-agent-server:problem:/);
  expect(res.body.detail.length).toBeGreaterThan(0);
}

/** A request with full control over the headers (fetch always adds a content type to a string body). */
function rawPost(url: string, body: string | undefined, headers: Record<string, string>): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve({ status: res.statusCode!, headers: h, body: parsed, text });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe('HTTP errors of the real app: application/problem+json with a stable code', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ configPath: join(__dirname, '../../demos/agents'), env: { TA_MAX_BODY_BYTES: String(MAX_BODY) } });
  });
  afterAll(() => t.close());

  describe('422 names the offending fields in errors[]', () => {
    it('for invalid nested values', async () => {
      const res = await postJson(`${t.url}/EchoAgent/0.1`, {
        chat_history: [{ role: 'robot', items: [{ content_type: 'video', content: 5 }] }],
        user_context: { lang: 1 },
      });
      expectProblem(res, 422, 'VALIDATION_FAILED', '/EchoAgent/0.1');
      const fields = res.body.errors.map((e: { field: string }) => e.field);
      expect(fields).toEqual(
        // user_context is not a field of v2alpha1's BaseMultiModalInput: ignored, as upstream (test/e2e/user-context.e2e-spec.ts).
        expect.arrayContaining(['chat_history.0.role', 'chat_history.0.items.0.content_type', 'chat_history.0.items.0.content']),
      );
      for (const e of res.body.errors) expect(e.message).toEqual(expect.any(String));
    });

    it('for an image that is not a data: URI', async () => {
      const res = await postJson(`${t.url}/EchoAgent/0.1/sse`, {
        chat_history: [{ role: 'user', items: [{ content_type: 'image', content: 'https://example.com/cat.png' }] }],
      });
      expectProblem(res, 422, 'VALIDATION_FAILED', '/EchoAgent/0.1/sse');
      expect(res.body.errors).toEqual([{ field: 'chat_history.0.items.0.content', message: expect.stringContaining('data:image') }]);
    });

    it('for an image sent to a text-only (BaseInput*) v1 agent', async () => {
      const res = await postJson(`${t.url}/PlannerBot/0.1`, {
        chat_history: [{ role: 'user', items: [{ content_type: 'image', content: 'data:image/png;base64,iVBORw0KGgo=' }] }],
      });
      expectProblem(res, 422, 'VALIDATION_FAILED', '/PlannerBot/0.1');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['chat_history.0.items.0.content_type']);
    });

    it('for a JSON array instead of an object', async () => {
      const res = await request(`${t.url}/EchoAgent/0.1`, { method: 'POST', rawBody: '[]', headers: { 'content-type': 'application/json' } });
      expectProblem(res, 422, 'VALIDATION_FAILED', '/EchoAgent/0.1');
      expect(res.body.errors).toEqual([{ field: '', message: expect.any(String) }]);
    });
  });

  describe('415', () => {
    it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp'])(
      'for a body sent as %s',
      async (type) => {
        const res = await rawPost(`${t.url}/EchoAgent/0.1`, JSON.stringify({ chat_history: [] }), { 'content-type': type });
        expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE', '/EchoAgent/0.1');
      },
    );

    // Upstream's FastAPI reads a body without a content type as JSON, and its orchestrators rely on it
    // (test/e2e/upstream-callers.e2e-spec.ts): only a malformed one is refused.
    it('for a body without a content type only when it is not JSON', async () => {
      const ok = await rawPost(`${t.url}/EchoAgent/0.1`, '{"chat_history":[{"role":"user","content":"as json"}]}', {});
      expect({ status: ok.status, output: ok.body?.output_raw }).toEqual({ status: 200, output: 'as json' });
      const res = await rawPost(`${t.url}/EchoAgent/0.1`, 'chat_history=x', { 'content-length': '14' });
      expectProblem(res, 415, 'MALFORMED_JSON', '/EchoAgent/0.1');
    });

    // A top-level scalar is refused by the JSON parser's strict mode, so it is malformed too.
    it.each(['{"chat_history": [', "{'single': 'quotes'}", '{"a":1}trailing', '"text"', 'null'])(
      'for malformed JSON with a JSON content type (our documented choice): %s',
      async (raw) => {
        const res = await request(`${t.url}/EchoAgent/0.1`, { method: 'POST', rawBody: raw, headers: { 'content-type': 'application/json' } });
        expectProblem(res, 415, 'MALFORMED_JSON', '/EchoAgent/0.1');
      },
    );

    it('but accepts application/*+json and a charset', async () => {
      const body = JSON.stringify({ chat_history: [{ role: 'user', content: 'ok' }] });
      for (const type of ['application/vnd.teal+json', 'application/json; charset=utf-8']) {
        const res = await rawPost(`${t.url}/EchoAgent/0.1`, body, { 'content-type': type });
        expect({ type, status: res.status }).toEqual({ type, status: 200 });
      }
    });
  });

  describe('413 above TA_MAX_BODY_BYTES', () => {
    const big = JSON.stringify({ chat_history: [{ role: 'user', content: 'x'.repeat(MAX_BODY) }] });

    it('with a content-length', async () => {
      expectProblem(
        await request(`${t.url}/EchoAgent/0.1`, { method: 'POST', rawBody: big, headers: { 'content-type': 'application/json' } }),
        413,
        'PAYLOAD_TOO_LARGE',
        '/EchoAgent/0.1',
      );
    });

    it('when chunked (no content-length: the limit is enforced while reading)', async () => {
      const res = await rawPost(`${t.url}/EchoAgent/0.1/sse`, big, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      expectProblem(res, 413, 'PAYLOAD_TOO_LARGE', '/EchoAgent/0.1/sse');
    });

    it('while a body just under the limit is served', async () => {
      const fits = JSON.stringify({ chat_history: [{ role: 'user', content: 'y'.repeat(MAX_BODY - 100) }] });
      expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(MAX_BODY);
      expect((await request(`${t.url}/EchoAgent/0.1`, { method: 'POST', rawBody: fits, headers: { 'content-type': 'application/json' } })).status).toBe(200);
    });
  });

  it('writes one warn line per 4xx, and no 4xx carries an error_id', async () => {
    const res = await postJson(`${t.url}/EchoAgent/0.1`, { chat_history: 'nope' });
    expect(res.status).toBe(422);
    expect(res.body.error_id).toBeUndefined();
    const id = res.headers.get('x-request-id');
    const deadline = Date.now() + 5000;
    while (!t.logs().some((l) => l.http_request_id === id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(t.logs().filter((l) => l.http_request_id === id)).toEqual([expect.objectContaining({ level: 'warn', status: 422, msg: 'request completed' })]);
  });
});

/** The real app has no deliberate 500, so the same middleware, interceptor and filter are mounted over a route that throws. */
@Controller('boom')
class BoomController {
  @Get()
  boom(): never {
    throw new TypeError("Cannot read properties of undefined (reading 'secretInternalDetail')");
  }

  @Post('sse')
  sse(@Res() res: Response): Promise<void> {
    res.status(200).setHeader('content-type', 'text/event-stream').flushHeaders();
    res.write('event: partial-response\ndata: {}\n\n');
    return Promise.reject(new Error('failed after the stream began'));
  }
}

describe('HTTP errors: an unexpected error is a 500 whose error_id is also in the log', () => {
  let app: NestExpressApplication;
  let url: string;
  const lines: string[] = [];
  const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });

  beforeAll(async () => {
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          cb();
        },
      }),
      activeTraceIds,
    );
    @Module({
      controllers: [BoomController],
      providers: [
        { provide: LOGGER, useValue: logger },
        { provide: TELEMETRY, useValue: telemetry },
        { provide: APP_FILTER, useFactory: () => new ProblemDetailsFilter(logger) },
        { provide: APP_INTERCEPTOR, useClass: TelemetryInterceptor },
      ],
    })
    class BoomModule {}
    app = await NestFactory.create<NestExpressApplication>(BoomModule, { logger: false });
    app.use(requestIdMiddleware);
    app.use(httpTelemetryMiddleware(telemetry, logger));
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app.close();
    await telemetry.shutdown();
  });

  it('answers a problem with code INTERNAL and an error_id, without internal details', async () => {
    const res = await request(`${url}/boom`, { headers: { 'x-request-id': 'req-500' } });
    expectProblem(res, 500, 'INTERNAL', '/boom');
    expect(res.body.error_id).toMatch(UUID);
    expect(res.body.detail).toContain(res.body.error_id);
    expect(res.text).not.toContain('secretInternalDetail');
    expect(res.text).not.toContain('TypeError');
  });

  it('logs the error_id with the original error, the request id and the trace id', async () => {
    const res = await request(`${url}/boom`, { headers: { 'x-request-id': 'req-500-log' } });
    const errorId = res.body.error_id;
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.error_id === errorId);
    expect(logged).toHaveLength(1);
    const traceId = res.headers.get('traceresponse')!.split('-')[1];
    expect(logged[0]).toMatchObject({
      level: 'error',
      http_request_id: 'req-500-log',
      trace_id: traceId,
      path: '/boom',
      err: { type: 'TypeError', message: expect.stringContaining('secretInternalDetail'), stack: expect.any(String) },
    });
  });

  it('once an SSE stream has begun, the error goes to the log and the stream just ends (no second response)', async () => {
    const res = await fetch(`${url}/boom/sse`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('event: partial-response\ndata: {}\n\n');
    expect(lines.map((l) => JSON.parse(l)).some((l) => l.error_id && l.err?.message === 'failed after the stream began')).toBe(true);
  });
});
