import { join } from 'node:path';
import { TELEMETRY } from '../../src/app.tokens';
import { Telemetry } from '../../src/telemetry/telemetry';
import { TelemetryInterceptor } from '../../src/telemetry/telemetry.interceptor';
import { postJson, request } from '../support/http';
import { OtlpReceiver, ReceivedMetricPoint, ReceivedSpan, SPAN_KIND, startOtlpReceiver } from '../support/otlp-receiver';
import { startTestApp, TestApp } from '../support/test-app';

const DEMOS = join(__dirname, '../../demos/agents');
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const BEARER = 'eyJhbGciOiJub25lIn0.c2VjcmV0LWJlYXJlci10b2tlbg.sig-NEVER-LOG-ME';
const API_KEY = 'sk-test-NEVER-LOG-THIS-API-KEY';
const HEX32 = /^[0-9a-f]{32}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HELLO = { chat_history: [{ role: 'user', content: 'hello telemetry' }] };

/** The `request completed` line of one request (written when its response closed, after its span ended). */
function requestLine(t: TestApp, requestId: string): Record<string, unknown> | undefined {
  return t.logs().find((l) => l.msg === 'request completed' && l.http_request_id === requestId);
}

async function waitForRequestLines(t: TestApp, requestIds: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!requestIds.every((id) => requestLine(t, id))) {
    if (Date.now() > deadline) throw new Error(`no "request completed" log line for ${requestIds.filter((id) => !requestLine(t, id))}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Cumulative temporality: the last exported point of a series holds its total. */
function lastPoint(r: OtlpReceiver, metric: string, attrs: Record<string, unknown>): ReceivedMetricPoint | undefined {
  return r
    .metricPoints()
    .filter((p) => p.metric === metric && Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))
    .at(-1);
}

describe('telemetry exported to a real OTLP/HTTP receiver', () => {
  let receiver: OtlpReceiver;
  let t: TestApp;
  const res: Record<'json' | 'sse' | 'notFound' | 'malformed' | 'unsafeId', { status: number; headers: Headers; text: string }> = {} as never;
  const server = (requestId: string): ReceivedSpan => {
    const span = receiver.spans().find((s) => s.kind === SPAN_KIND.SERVER && s.attributes['ta.http.request_id'] === requestId);
    if (!span) throw new Error(`no SERVER span for request ${requestId}`);
    return span;
  };
  const childrenOf = (span: ReceivedSpan) => receiver.spans().filter((s) => s.parentSpanId === span.spanId);
  // Which of the interceptor's two paths Nest took (common/http/promise-interceptors.ts).
  const paths = { promise: jest.spyOn(TelemetryInterceptor.prototype, 'aroundHandler'), rxjs: jest.spyOn(TelemetryInterceptor.prototype, 'intercept') };

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    t = await startTestApp({ configPath: DEMOS, env: { TA_OTEL_ENDPOINT: receiver.url, TA_API_KEY: API_KEY } });
    const auth = { authorization: `Bearer ${BEARER}` };
    res.json = await postJson(`${t.url}/EchoAgent/0.1`, HELLO, {
      ...auth,
      traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01`,
      'x-request-id': 'caller-request-42',
    });
    const sse = await fetch(`${t.url}/EchoAgent/0.1/sse`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(HELLO),
    });
    res.sse = { status: sse.status, headers: sse.headers, text: await sse.text() };
    res.notFound = await request(`${t.url}/NoSuchAgent/9.9`, { headers: auth });
    res.malformed = await request(`${t.url}/EchoAgent/0.1`, {
      method: 'POST',
      rawBody: '{"chat_history": [',
      headers: { ...auth, 'content-type': 'application/json' },
    });
    res.unsafeId = await request(`${t.url}/EchoAgent/0.1/openapi.json`, { headers: { 'x-request-id': 'spaces are not allowed' } });
    await waitForRequestLines(
      t,
      Object.values(res).map((r) => r.headers.get('x-request-id')!),
    );
    await t.app.get<Telemetry>(TELEMETRY).flush();
    await receiver.waitFor(() => receiver.spans().filter((s) => s.kind === SPAN_KIND.SERVER).length >= 5, '5 SERVER spans');
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    paths.promise.mockRestore();
    paths.rxjs.mockRestore();
  });

  it("wraps each routed request's handler with promises, not Nest's rxjs chain, in the span's context (the children below)", () => {
    // The JSON and SSE invocations and the OpenAPI document reached a route; the 404 and the 400 did not.
    expect(paths.promise).toHaveBeenCalledTimes(3);
    expect(paths.rxjs).not.toHaveBeenCalled();
  });

  it('exports traces and metrics as OTLP/HTTP JSON', () => {
    const paths = new Set(receiver.requests().map((r) => r.path));
    expect(paths).toEqual(new Set(['/v1/traces', '/v1/metrics']));
    expect(receiver.requests().every((r) => r.contentType.startsWith('application/json'))).toBe(true);
    expect(receiver.rejected()).toEqual([]);
    expect(server('caller-request-42').resource).toMatchObject({ 'service.name': 'teal-agent-server', 'service.version': '0.1.0' });
  });

  it('exports a SERVER span per request, named by method and route, with HTTP and agent attributes', () => {
    expect(res.json.status).toBe(200);
    const span = server('caller-request-42');
    expect(span.name).toBe('POST /EchoAgent/0.1');
    expect(span.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/EchoAgent/0.1',
      'url.path': '/EchoAgent/0.1',
      'http.response.status_code': 200,
      'ta.agent.name': 'EchoAgent',
      'ta.agent.version': '0.1',
      'gen_ai.request.model': 'local/echo',
    });
    expect(BigInt(span.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(span.startTimeUnixNano));
  });

  it("continues the caller's W3C trace: same trace id, parent = the caller's span", () => {
    const span = server('caller-request-42');
    expect(span.traceId).toBe(CALLER_TRACE_ID);
    expect(span.parentSpanId).toBe(CALLER_SPAN_ID);
    expect(res.json.headers.get('traceresponse')).toBe(`00-${CALLER_TRACE_ID}-${span.spanId}-01`);
  });

  it('records the agent invocation as an invoke_agent child span with token counts', () => {
    const span = server('caller-request-42');
    const [invoke, ...others] = childrenOf(span);
    expect(others).toEqual([]);
    expect(invoke).toMatchObject({ name: 'invoke_agent EchoAgent:0.1', kind: SPAN_KIND.INTERNAL, traceId: CALLER_TRACE_ID });
    const usage = JSON.parse(res.json.text).token_usage;
    expect(usage).toEqual({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
    expect(invoke!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.request.model': 'local/echo',
      'gen_ai.usage.input_tokens': usage.prompt_tokens,
      'gen_ai.usage.output_tokens': usage.completion_tokens,
      'ta.usage.total_tokens': usage.total_tokens,
    });
  });

  it('measures an SSE request whole: a new trace with the invoke_agent child, ended with the stream', () => {
    expect(res.sse.status).toBe(200);
    expect(res.sse.text).toContain('event: final-response');
    const span = server(res.sse.headers.get('x-request-id')!);
    expect(span.name).toBe('POST /EchoAgent/0.1/sse');
    expect(span.parentSpanId).toBe('');
    expect(span.traceId).toMatch(HEX32);
    expect(span.traceId).not.toBe(CALLER_TRACE_ID);
    expect(span.attributes).toMatchObject({ 'http.route': '/EchoAgent/0.1/sse', 'http.response.status_code': 200 });
    const [invoke] = childrenOf(span);
    expect(invoke).toMatchObject({ name: 'invoke_agent EchoAgent:0.1', traceId: span.traceId });
    expect(invoke!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 7, 'gen_ai.usage.output_tokens': 2 });
    // Ended when the response closed (status known, stream complete), not when the handler returned.
    expect(requestLine(t, res.sse.headers.get('x-request-id')!)).toMatchObject({ status: 200, aborted: false, trace_id: span.traceId });
  });

  it('also traces requests that never reach a route (404, 415 from the body parser)', () => {
    expect(res.notFound.status).toBe(404);
    expect(res.malformed.status).toBe(415);
    const notFound = server(res.notFound.headers.get('x-request-id')!);
    expect(notFound.name).toBe('GET');
    expect(notFound.attributes).toMatchObject({ 'url.path': '/NoSuchAgent/9.9', 'http.response.status_code': 404 });
    expect(notFound.attributes['http.route']).toBeUndefined();
    const malformed = server(res.malformed.headers.get('x-request-id')!);
    expect(malformed.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 415 });
  });

  it('exports request count and duration metrics per route and status', () => {
    const route = { 'http.request.method': 'POST', 'http.route': '/EchoAgent/0.1', 'http.response.status_code': 200 };
    expect(lastPoint(receiver, 'ta.http.server.requests', route)).toMatchObject({ type: 'sum', value: 1 });
    expect(lastPoint(receiver, 'ta.http.server.requests', { ...route, 'http.route': '/EchoAgent/0.1/sse' })?.value).toBe(1);
    expect(lastPoint(receiver, 'ta.http.server.requests', { 'http.response.status_code': 404 })?.value).toBe(1);
    expect(lastPoint(receiver, 'ta.http.server.requests', { 'http.response.status_code': 415 })?.value).toBe(1);
    const duration = lastPoint(receiver, 'http.server.request.duration', route);
    expect(duration).toMatchObject({ type: 'histogram', unit: 's', count: 1, attributes: { 'ta.agent.name': 'EchoAgent' } });
    expect(duration!.sum).toBeGreaterThan(0);
  });

  it('exports token usage and invocation metrics', () => {
    // Two invocations (JSON and SSE) of 7 prompt and 2 completion tokens each.
    const base = { 'gen_ai.request.model': 'local/echo', 'ta.agent.name': 'EchoAgent' };
    expect(lastPoint(receiver, 'gen_ai.client.token.usage', { ...base, 'gen_ai.token.type': 'input' })).toMatchObject({
      type: 'histogram',
      unit: '{token}',
      count: 2,
      sum: 14,
    });
    expect(lastPoint(receiver, 'gen_ai.client.token.usage', { ...base, 'gen_ai.token.type': 'output' })).toMatchObject({ count: 2, sum: 4 });
    expect(lastPoint(receiver, 'ta.agent.invocations', { 'ta.agent.name': 'EchoAgent', outcome: 'ok' })?.value).toBe(2);
    expect(lastPoint(receiver, 'ta.agent.invocation.duration', { outcome: 'ok' })?.count).toBe(2);
  });

  it('writes JSON log lines, one per request, carrying trace_id, span_id and http_request_id (the X-Request-Id)', () => {
    const raw = t.rawLogs().split('\n');
    expect(raw.length).toBeGreaterThan(0);
    for (const line of raw) expect(() => JSON.parse(line)).not.toThrow();
    const line = requestLine(t, 'caller-request-42');
    expect(line).toMatchObject({
      level: 'info',
      trace_id: CALLER_TRACE_ID,
      span_id: server('caller-request-42').spanId,
      method: 'POST',
      path: '/EchoAgent/0.1',
      status: 200,
      agent: 'EchoAgent:0.1',
    });
    for (const r of Object.values(res)) {
      const id = r.headers.get('x-request-id')!;
      expect(t.logs().filter((l) => l.msg === 'request completed' && l.http_request_id === id)).toHaveLength(1);
      expect(requestLine(t, id)!.trace_id).toBe(server(id).traceId);
    }
    expect(requestLine(t, res.notFound.headers.get('x-request-id')!)).toMatchObject({ level: 'warn', status: 404 });
  });

  it("echoes X-Request-Id: the caller's when sane, else a new UUID", () => {
    expect(res.json.headers.get('x-request-id')).toBe('caller-request-42');
    expect(res.sse.headers.get('x-request-id')).toMatch(UUID);
    expect(res.unsafeId.headers.get('x-request-id')).toMatch(UUID);
    expect(t.rawLogs()).not.toContain('spaces are not allowed');
  });

  it('never logs or exports the bearer token or TA_API_KEY', () => {
    const raw = t.rawLogs();
    const exported = JSON.stringify([receiver.spans(), receiver.metricPoints()]);
    for (const secret of [BEARER, API_KEY, 'NEVER-LOG']) {
      expect(raw).not.toContain(secret);
      expect(exported).not.toContain(secret);
    }
  });
});

describe('telemetry on shutdown', () => {
  it('exports the spans and metrics of the last requests when the app closes', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const t = await startTestApp({ configPath: DEMOS, env: { TA_OTEL_ENDPOINT: receiver.url } });
      const live = await request(`${t.url}/EchoAgent/0.1/openapi.json`);
      expect(live.status).toBe(200);
      const id = live.headers.get('x-request-id')!;
      await waitForRequestLines(t, [id]);
      await t.close(); // no explicit flush: closing the app must export what is pending
      const span = receiver.spans().find((s) => s.attributes['ta.http.request_id'] === id);
      expect(span).toMatchObject({ name: 'GET /EchoAgent/0.1/openapi.json', kind: SPAN_KIND.SERVER });
      expect(lastPoint(receiver, 'ta.http.server.requests', { 'http.route': '/EchoAgent/0.1/openapi.json' })?.value).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('probe logging', () => {
  it('logs successful health probes at debug only, so polling does not flood the logs', async () => {
    const t = await startTestApp({ configPath: DEMOS });
    try {
      const live = await request(`${t.url}/EchoAgent/0.1/health/live`);
      const docs = await request(`${t.url}/EchoAgent/0.1/openapi.json`);
      await waitForRequestLines(t, [docs.headers.get('x-request-id')!]);
      expect(t.logs().some((l) => l.http_request_id === live.headers.get('x-request-id'))).toBe(false);
    } finally {
      await t.close();
    }
  });
});
