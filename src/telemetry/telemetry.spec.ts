import { context, ROOT_CONTEXT, Span, trace, TraceFlags } from '@opentelemetry/api';
import { callerFields, LogContext, oidHash } from '../common/logging/log-context';
import type { PooledStore, PoolWaitListener } from '../state/connection-pool';
import { activeTraceIds, Telemetry } from './telemetry';

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
    expect(span.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    // Nothing is exported, so nothing is recorded: the span carries its ids only (UnexportedTracer).
    expect(span.isRecording()).toBe(false);
    span.end();
  });

  it("keeps a caller's decision not to sample, and samples a new trace", () => {
    const unsampled = telemetry.startServerSpan('GET /x', telemetry.extract({ traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` }), {});
    expect(unsampled.spanContext()).toMatchObject({ traceId: TRACE_ID, traceFlags: TraceFlags.NONE });
    const root = telemetry.startServerSpan('GET /x', ROOT_CONTEXT, {});
    expect(root.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    const ids = new Set(Array.from({ length: 200 }, () => telemetry.startServerSpan('GET /x', ROOT_CONTEXT, {}).spanContext().spanId));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
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
    const inner = await context.with(trace.setSpan(ROOT_CONTEXT, server), () => telemetry.inSpan('invoke_agent A', {}, async (span) => span.spanContext()));
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

  it("carries the active span's ids and the log context's ids, also across awaits and ids added later", async () => {
    const span = telemetry.startServerSpan('GET /x', ROOT_CONTEXT, {});
    const log = new LogContext({ http_request_id: 'req-7', agent: 'A:1' }, span);
    const ctx = log.in(trace.setSpan(ROOT_CONTEXT, span));
    const seen = await context.with(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      log.set({ task_id: 't-1', request_id: 'r-1', session_id: 's-1', ...callerFields({ tenantId: 'tid-1', ownerId: 'oid-1' }) });
      return activeTraceIds();
    });
    expect(seen).toEqual({
      trace_id: span.spanContext().traceId,
      span_id: span.spanContext().spanId,
      http_request_id: 'req-7',
      agent: 'A:1',
      task_id: 't-1',
      request_id: 'r-1',
      session_id: 's-1',
      tid: 'tid-1',
      oid_hash: oidHash('oid-1'),
    });
    expect(oidHash('oid-1')).toMatch(/^[0-9a-f]{16}$/);
    // Recorded on a span that records (an exported one); here nothing is exported, so a span that keeps them stands in.
    const attributes: Record<string, unknown> = {};
    const recording = { ...span, setAttribute: (k: string, v: unknown) => ((attributes[k] = v), recording) } as unknown as Span;
    const logged = new LogContext({}, recording);
    logged.set({ task_id: 't-1', request_id: 'r-1', session_id: 's-1', ...callerFields({ tenantId: 'tid-1', ownerId: 'oid-1' }) });
    expect(attributes).toMatchObject({
      'ta.task_id': 't-1',
      'ta.request_id': 'r-1',
      'ta.session_id': 's-1',
      'ta.tid': 'tid-1',
      'ta.oid_hash': oidHash('oid-1'),
    });
    span.end();
  });
});

describe('Telemetry with the Prometheus reader (TA_METRICS_PROMETHEUS)', () => {
  it('serves what was recorded in the Prometheus text format, including the rate-limit counter the limiter will call', async () => {
    const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0', prometheus: true });
    try {
      const before = await telemetry.prometheusText();
      expect(before).toMatch(/^ta_rate_limited_total\{ta_limit="requests_per_caller",[^}]*\} 0$/m);
      telemetry.recordRateLimited('requests_per_caller');
      telemetry.recordRateLimited('requests_per_caller');
      telemetry.recordStoreError('STATE_STORE_UNAVAILABLE');
      let running = 2;
      telemetry.observeRunningRequests(() => running);
      const text = await telemetry.prometheusText();
      expect(text).toMatch(/^# TYPE ta_rate_limited_total counter$/m);
      expect(text).toMatch(/^ta_rate_limited_total\{ta_limit="requests_per_caller",[^}]*\} 2$/m);
      expect(text).toMatch(/^ta_state_store_errors_total\{error_type="STATE_STORE_UNAVAILABLE",[^}]*\} 1$/m);
      expect(text).toMatch(/^ta_requests_running\{[^}]*\} 2$/m);
      running = 0;
      expect(await telemetry.prometheusText()).toMatch(/^ta_requests_running\{[^}]*\} 0$/m); // read at scrape time
    } finally {
      await telemetry.shutdown();
    }
  });

  it("observes a pooled store's pool (PostgreSQL): waits by outcome and duration, waiting calls and connections read at scrape time; once per store", async () => {
    const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0', prometheus: true });
    try {
      expect(await telemetry.prometheusText()).not.toMatch(/ta_state_store_pool/); // no pooled store: no pool metrics
      const stats = { max: 5, total: 5, idle: 0, waiting: 3 };
      const listeners: PoolWaitListener[] = [];
      const store: PooledStore = { poolStats: () => stats, onPoolWait: (l) => listeners.push(l) };
      telemetry.observeStorePool(store);
      telemetry.observeStorePool(store);
      expect(listeners).toHaveLength(1);
      let text = await telemetry.prometheusText();
      expect(text).toMatch(/^ta_state_store_pool_waits_total\{outcome="acquired",[^}]*\} 0$/m); // at 0 from the start
      expect(text).toMatch(/^ta_state_store_pool_waits_total\{outcome="failed",[^}]*\} 0$/m);
      expect(text).toMatch(/^# TYPE ta_state_store_pool_waiting gauge$/m);
      expect(text).toMatch(/^ta_state_store_pool_waiting\{[^}]*\} 3$/m);
      expect(text).toMatch(/^ta_state_store_pool_connections\{state="used",[^}]*\} 5$/m);
      expect(text).toMatch(/^ta_state_store_pool_connections\{state="idle",[^}]*\} 0$/m);
      expect(text).toMatch(/^ta_state_store_pool_max\{[^}]*\} 5$/m);

      listeners[0]!(0.003, 'acquired');
      listeners[0]!(0.2, 'acquired');
      listeners[0]!(2.001, 'failed');
      Object.assign(stats, { total: 4, idle: 3, waiting: 0 });
      text = await telemetry.prometheusText();
      expect(text).toMatch(/^# TYPE ta_state_store_pool_waits_total counter$/m);
      expect(text).toMatch(/^ta_state_store_pool_waits_total\{outcome="acquired",[^}]*\} 2$/m);
      expect(text).toMatch(/^ta_state_store_pool_waits_total\{outcome="failed",[^}]*\} 1$/m);
      expect(text).toMatch(/^# TYPE ta_state_store_pool_wait_duration histogram$/m);
      expect(text).toMatch(/^ta_state_store_pool_wait_duration_count\{outcome="acquired",[^}]*\} 2$/m);
      expect(text).toMatch(/^ta_state_store_pool_wait_duration_bucket\{outcome="acquired",[^}]*le="0.005"\} 1$/m);
      expect(text).toMatch(/^ta_state_store_pool_wait_duration_sum\{outcome="failed",[^}]*\} 2.001$/m);
      expect(text).toMatch(/^ta_state_store_pool_waiting\{[^}]*\} 0$/m);
      expect(text).toMatch(/^ta_state_store_pool_connections\{state="used",[^}]*\} 1$/m);
      expect(text).toMatch(/^ta_state_store_pool_connections\{state="idle",[^}]*\} 3$/m);
    } finally {
      await telemetry.shutdown();
    }
  });

  it('registers nothing on a pooled store when nothing reads the metrics (its calls are then not timed)', async () => {
    const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
    const onPoolWait = jest.fn();
    telemetry.observeStorePool({ poolStats: () => ({ max: 1, total: 0, idle: 0, waiting: 0 }), onPoolWait });
    expect(onPoolWait).not.toHaveBeenCalled();
    await telemetry.shutdown();
  });

  it('has no Prometheus output unless enabled', async () => {
    const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
    await expect(telemetry.prometheusText()).rejects.toThrow(/TA_METRICS_PROMETHEUS/);
    await telemetry.shutdown();
  });
});
