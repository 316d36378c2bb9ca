import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { activeTraceIds, REQUEST_ID_KEY, Telemetry } from './telemetry';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';

describe('Telemetry (no exporter configured)', () => {
  const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
  afterAll(() => telemetry.shutdown());

  it("starts a SERVER span as a child of the caller's traceparent", () => {
    const parent = telemetry.extract({ traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
    expect(trace.getSpanContext(parent)).toMatchObject({ traceId: TRACE_ID, spanId: PARENT_ID, isRemote: true });
    const span = telemetry.startServerSpan('GET /x', parent, {});
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.spanContext().spanId).not.toBe(PARENT_ID);
    expect(span.isRecording()).toBe(true);
    span.end();
  });

  it.each([
    ['absent', {}],
    ['all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-${PARENT_ID}-01` }],
    ['garbage', { traceparent: 'not-a-traceparent' }],
  ])('starts a new trace when the traceparent is %s', (_label, headers) => {
    const parent = telemetry.extract(headers);
    expect(trace.getSpanContext(parent)).toBeUndefined();
    const span = telemetry.startServerSpan('GET /x', parent, {});
    expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(span.spanContext().traceId).not.toBe('0'.repeat(32));
    span.end();
  });

  it('inSpan runs the function in a child span of the active one and rethrows its error', async () => {
    const server = telemetry.startServerSpan('POST /a', ROOT_CONTEXT, {});
    const inner = await context.with(trace.setSpan(ROOT_CONTEXT, server), () =>
      telemetry.inSpan('invoke_agent A', {}, async (span) => span.spanContext()),
    );
    expect(inner.traceId).toBe(server.spanContext().traceId);
    expect(inner.spanId).not.toBe(server.spanContext().spanId);
    await expect(telemetry.inSpan('failing', {}, async () => Promise.reject(new Error('nope')))).rejects.toThrow('nope');
    server.end();
  });

  it('flush and shutdown resolve without an exporter', async () => {
    await expect(telemetry.flush()).resolves.toBeUndefined();
  });
});

describe('activeTraceIds (the log mixin)', () => {
  const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
  afterAll(() => telemetry.shutdown());

  it('is empty outside a request', () => {
    expect(activeTraceIds()).toEqual({});
  });

  it("carries the active span's ids and the request id, also across awaits", async () => {
    const span = telemetry.startServerSpan('GET /x', ROOT_CONTEXT, {});
    const ctx = trace.setSpan(ROOT_CONTEXT, span).setValue(REQUEST_ID_KEY, 'req-7');
    const seen = await context.with(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return activeTraceIds();
    });
    expect(seen).toEqual({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId, request_id: 'req-7' });
    span.end();
  });
});
