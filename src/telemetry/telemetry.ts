import {
  Attributes,
  context,
  Context,
  Counter,
  createNoopMeter,
  diag,
  Histogram,
  Meter,
  ObservableResult,
  propagation,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
  UpDownCounter,
} from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { TracerProvider } from '@opentelemetry/sdk-trace';
import type { StoreErrorCounter } from '../common/errors/store-error-counter.port';
import { POOL_WAIT_OUTCOMES, PooledStore, PoolWaitOutcome } from '../state/connection-pool';
import { LogContext, LogFields } from '../common/logging/log-context';
import { TokenUsage } from '../llm/llm-client.port';
import { UnexportedTracer } from './unexported-tracer';
import { W3CTraceContext } from './w3c-trace-context';
import { PLAIN_ROOT, PlainRootContextManager } from './plain-context';

export interface TelemetryOptions {
  serviceName: string;
  serviceVersion: string;
  /** OTLP/HTTP base URL (`TA_OTEL_ENDPOINT`): traces go to `/v1/traces`, metrics to `/v1/metrics`. */
  otlpEndpoint?: string;
  metricExportIntervalMs?: number;
  /** `TA_METRICS_PROMETHEUS`: keep a Prometheus reader, scraped through `GET /metrics` (no server of its own). */
  prometheus?: boolean;
}

/** What a refused request hit (`recordRateLimited`). */
export const RATE_LIMIT_KINDS = ['requests_per_caller', 'requests_per_agent', 'concurrent_per_caller', 'tokens_per_caller'] as const;
export type RateLimitKind = (typeof RATE_LIMIT_KINDS)[number];

/**
 * Bucket bounds in seconds: the SDK's defaults (0 to 10 000) suit milliseconds, so every request
 * would land in the first bucket. From the HTTP semantic conventions, extended to the minutes a
 * model run with tools can take.
 */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300];
/** Waits for a pooled store connection: bounded by TA_POSTGRES_ACQUIRE_TIMEOUT_MS (2 s by default), so finer at the bottom. */
const POOL_WAIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** The GenAI semantic conventions' bounds for `gen_ai.client.token.usage`. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];

let contextManagerInstalled = false;

/** Async context must follow `await`s for spans to nest; installed once per process. */
function ensureContextManager(): void {
  if (contextManagerInstalled) return;
  contextManagerInstalled = context.setGlobalContextManager(new PlainRootContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContext());
}

/**
 * Tracing and metrics for the whole app, owned by one instance (not the global OTel providers, so
 * two apps in one test process do not share exporters). Spans always exist (trace ids in logs and
 * `traceparent` propagation work without a collector); they are exported only when an OTLP
 * endpoint is configured.
 */
export class Telemetry implements StoreErrorCounter {
  readonly tracer: Tracer;
  private readonly meter: Meter;
  /** None when no span is exported (no OTLP endpoint): spans then carry their ids only (UnexportedTracer). */
  private readonly tracerProvider?: TracerProvider;
  /** None when nothing reads the metrics (no OTLP endpoint, no Prometheus): see the constructor. */
  private readonly meterProvider?: MeterProvider;
  private readonly propagator = new W3CTraceContext();
  readonly httpRequests: Counter;
  readonly httpDuration: Histogram;
  readonly invocations: Counter;
  readonly invocationDuration: Histogram;
  readonly tokenUsage: Histogram;
  private archiveFailures?: Counter;
  readonly tokens: Counter;
  readonly toolCalls: Counter;
  readonly toolDuration: Histogram;
  readonly approvalsPending: UpDownCounter;
  readonly storeErrors: Counter;
  readonly rateLimited: Counter;
  /** Webhook delivery attempts, by event and outcome (delivered, failed, dead). */
  readonly webhookAttempts: Counter;
  /** From an event to its delivery (lag). */
  readonly webhookLag: Histogram;
  /** Set when `prometheus` is on: the reader `GET /metrics` serves. */
  private readonly prometheus?: { reader: PrometheusExporter; serializer: PrometheusSerializer };
  private readonly runningRequests: (() => number)[] = [];
  /** The stores whose pool is observed (`observeStorePool`), each once. */
  private readonly pooledStores = new WeakSet<PooledStore>();

  constructor(options: TelemetryOptions) {
    ensureContextManager();
    // The resource (and with it @opentelemetry/semantic-conventions, ~400 KB of code) only for an exporter or a reader.
    let resource: Resource | undefined;
    const resourceOf = (): Resource =>
      (resource ??= (require('@opentelemetry/resources') as typeof import('@opentelemetry/resources')).resourceFromAttributes({
        'service.name': options.serviceName,
        'service.version': options.serviceVersion,
      }));
    const base = options.otlpEndpoint?.replace(/\/+$/, '');
    const otlp = base ? otlpExporters(base) : undefined;
    if (otlp) {
      const { BatchSpanProcessor, TracerProvider } = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
      this.tracerProvider = new TracerProvider({
        resource: resourceOf(),
        spanProcessors: [new BatchSpanProcessor({ exporter: otlp.traces, scheduledDelayMillis: 1000 })],
      });
    }
    const readers: MetricReader[] = [];
    if (otlp) {
      const { PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
      readers.push(new PeriodicExportingMetricReader({ exporter: otlp.metrics, exportIntervalMillis: options.metricExportIntervalMs ?? 10_000 }));
    }
    if (options.prometheus) {
      const { PrometheusExporter, PrometheusSerializer } = require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
      // Served by our own route (auth-free, beside the API), never by a server of its own.
      this.prometheus = { reader: new PrometheusExporter({ preventServerStart: true }), serializer: new PrometheusSerializer() };
      readers.push(this.prometheus.reader);
    }
    if (readers.length) {
      const { MeterProvider } = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
      this.meterProvider = new MeterProvider({ resource: resourceOf(), readers });
    }
    // Metrics nothing reads are not kept: the API's no-op meter takes every add and record for
    // nothing, and the metrics SDK (~50 modules) is not even loaded (issue 14).
    this.meter = this.meterProvider?.getMeter('teal-agent-server', options.serviceVersion) ?? createNoopMeter();
    this.tracer = this.tracerProvider?.getTracer('teal-agent-server', options.serviceVersion) ?? new UnexportedTracer();
    this.httpRequests = this.meter.createCounter('ta.http.server.requests', { description: 'HTTP requests served' });
    this.httpDuration = this.meter.createHistogram('http.server.request.duration', {
      description: 'Duration of HTTP requests',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    });
    this.invocations = this.meter.createCounter('ta.agent.invocations', { description: 'Agent invocations' });
    this.invocationDuration = this.meter.createHistogram('ta.agent.invocation.duration', {
      description: 'Duration of agent invocations',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    });
    this.tokenUsage = this.meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Tokens used per model call',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
    this.tokens = this.meter.createCounter('ta.llm.tokens', {
      description: 'Tokens used by model calls, by gen_ai.token.type (input, output)',
      unit: '{token}',
    });
    this.toolCalls = this.meter.createCounter('ta.tool.calls', { description: 'Tool calls executed, by tool and outcome' });
    this.toolDuration = this.meter.createHistogram('ta.tool.duration', {
      description: 'Duration of tool calls (retries included)',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    });
    this.approvalsPending = this.meter.createUpDownCounter('ta.approvals.pending', {
      description: 'Tasks paused for an approval decision (paused minus decided, canceled or expired, as seen by this process)',
    });
    this.storeErrors = this.meter.createCounter('ta.state_store.errors', { description: 'State store failures, by error code' });
    this.rateLimited = this.meter.createCounter('ta.rate_limited', { description: 'Requests refused by a rate limit (429), by limit' });
    this.webhookAttempts = this.meter.createCounter('ta.webhook.attempts', {
      description: 'Webhook delivery attempts, by event and outcome (delivered; failed: to be retried; dead: the last one failed)',
    });
    this.webhookLag = this.meter.createHistogram('ta.webhook.lag', {
      description: 'From an event to its delivery (the 2xx), retries included',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    });
    this.meter
      .createObservableGauge('ta.requests.running', { description: 'Agent requests running in this process' })
      .addCallback((result: ObservableResult) => result.observe(this.runningRequests.reduce((n, read) => n + read(), 0)));
    // These read 0 until something happens: the series exist from the start, so alerts and
    // dashboards see 0 rather than nothing.
    this.approvalsPending.add(0);
    for (const code of ['STATE_STORE_UNAVAILABLE', 'STATE_CORRUPT']) this.storeErrors.add(0, storeErrorAttributes(code));
    for (const limit of RATE_LIMIT_KINDS) this.rateLimited.add(0, { 'ta.limit': limit });
  }

  /** One webhook delivery attempt (src/tasks/webhooks/webhook-outbox.service.ts) and, when delivered, its lag since the event. */
  recordWebhookAttempt(event: string, outcome: 'delivered' | 'failed' | 'dead', lagSeconds?: number): void {
    this.webhookAttempts.add(1, { 'ta.webhook.event': event, outcome });
    if (lagSeconds !== undefined) this.webhookLag.record(lagSeconds, { 'ta.webhook.event': event });
  }

  /** Every metric now, in the Prometheus text exposition format (only with `prometheus` on). */
  async prometheusText(): Promise<string> {
    if (!this.prometheus) throw new Error('the Prometheus reader is not enabled (TA_METRICS_PROMETHEUS)');
    const { resourceMetrics, errors } = await this.prometheus.reader.collect();
    if (errors.length) diag.error('metrics collection errors', ...errors);
    return this.prometheus.serializer.serialize(resourceMetrics);
  }

  /** Reports the count of running requests when metrics are collected (nothing is spent per request). */
  observeRunningRequests(read: () => number): void {
    this.runningRequests.push(read);
  }

  /**
   * The state store's connection pool (PostgreSQL), for a store that keeps one: each call that had
   * to wait for a connection (`ta.state_store.pool.waits`, by outcome, and how long it waited), and
   * at collection the calls waiting and the connections by state. Not registered for other stores,
   * nor when nothing reads the metrics (then the store does not even time its calls).
   */
  observeStorePool(store: PooledStore): void {
    if (!this.meterProvider || this.pooledStores.has(store)) return;
    this.pooledStores.add(store);
    const waits = this.meter.createCounter('ta.state_store.pool.waits', {
      description: 'State store calls that found every pooled connection busy and the pool at its max, so waited; by outcome (acquired, failed)',
    });
    const waitDuration = this.meter.createHistogram('ta.state_store.pool.wait.duration', {
      description: 'How long state store calls waited for a pooled connection',
      unit: 's',
      advice: { explicitBucketBoundaries: POOL_WAIT_BUCKETS },
    });
    const outcomes = new Map<PoolWaitOutcome, Attributes>(POOL_WAIT_OUTCOMES.map((o) => [o, { outcome: o }]));
    for (const attributes of outcomes.values()) waits.add(0, attributes);
    store.onPoolWait((seconds, outcome) => {
      const attributes = outcomes.get(outcome);
      waits.add(1, attributes);
      waitDuration.record(seconds, attributes);
    });
    this.meter
      .createObservableGauge('ta.state_store.pool.waiting', { description: 'State store calls waiting for a pooled connection now' })
      .addCallback((result: ObservableResult) => result.observe(store.poolStats().waiting));
    const [used, idle] = [{ state: 'used' }, { state: 'idle' }];
    this.meter
      .createObservableGauge('ta.state_store.pool.connections', { description: 'Open state store connections of this process, by state (used, idle)' })
      .addCallback((result: ObservableResult) => {
        const stats = store.poolStats();
        result.observe(stats.total - stats.idle, used);
        result.observe(stats.idle, idle);
      });
    this.meter
      .createObservableGauge('ta.state_store.pool.max', { description: 'Connections the state store pool may open (TA_POSTGRES_POOL_MAX)' })
      .addCallback((result: ObservableResult) => result.observe(store.poolStats().max));
  }

  /** A request refused by a rate limit: for the limiter to call where it answers 429 (`ta_rate_limited_total`). */
  recordRateLimited(limit: RateLimitKind, attributes: Attributes = {}): void {
    this.rateLimited.add(1, { ...attributes, 'ta.limit': limit });
  }

  /**
   * The audit archive's queue and lag (src/tasks/archive/archiver.service.ts), read at collection:
   * `ta.archive.queue` (tasks waiting on this replica), `ta.archive.lag` (seconds since the oldest
   * change this replica knows unarchived), `ta.archive.dropped` (commits a full queue left to the
   * catch-up), and `ta.archive.failures` (writes the archive did not take).
   */
  observeArchive(read: () => { queued: number; lagSeconds: number; dropped: number }): void {
    if (this.archiveFailures) return;
    this.archiveFailures = this.meter.createCounter('ta.archive.failures', { description: 'Writes the audit archive did not take (retried by the catch-up)' });
    this.archiveFailures.add(0);
    this.meter
      .createObservableGauge('ta.archive.queue', { description: 'Tasks waiting in this replica archive queue' })
      .addCallback((result: ObservableResult) => result.observe(read().queued));
    this.meter
      .createObservableGauge('ta.archive.lag.seconds', { description: 'Seconds since the oldest change this replica knows is not archived yet', unit: 's' })
      .addCallback((result: ObservableResult) => result.observe(read().lagSeconds));
    this.meter
      .createObservableCounter('ta.archive.dropped', { description: 'Commits a full archive queue left to the catch-up' })
      .addCallback((result: ObservableResult) => result.observe(read().dropped));
  }

  /** A write the audit archive did not take. */
  recordArchiveFailure(): void {
    this.archiveFailures?.add(1);
  }

  /** A state store failure (STATE_STORE_UNAVAILABLE or STATE_CORRUPT). */
  recordStoreError(code: string): void {
    this.storeErrors.add(1, storeErrorAttributes(code));
  }

  /** The parent context carried by a request's `traceparent`/`tracestate` headers (W3C). */
  extract(headers: Record<string, string | string[] | undefined>): Context {
    return this.propagator.extract(PLAIN_ROOT, headers, {
      get: (carrier, key) => carrier[key],
      keys: (carrier) => Object.keys(carrier),
    });
  }

  startServerSpan(name: string, parent: Context, attributes: Attributes): Span {
    return this.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  }

  /** Runs `fn` inside a child span of the active one; the span records errors and always ends. */
  async inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
    return this.tracer.startActiveSpan(name, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.end();
      }
    });
  }

  recordTokens(usage: TokenUsage, attributes: Attributes): void {
    if (usage.prompt_tokens) {
      const input = { ...attributes, 'gen_ai.token.type': 'input' };
      this.tokenUsage.record(usage.prompt_tokens, input);
      this.tokens.add(usage.prompt_tokens, input);
    }
    if (usage.completion_tokens) {
      const output = { ...attributes, 'gen_ai.token.type': 'output' };
      this.tokenUsage.record(usage.completion_tokens, output);
      this.tokens.add(usage.completion_tokens, output);
    }
  }

  /** One finished tool call: its count and duration (the attribute object is shared by both). */
  recordToolCall(tool: string, outcome: string, seconds: number): void {
    const attributes = { 'gen_ai.tool.name': tool, 'ta.tool.outcome': outcome };
    this.toolCalls.add(1, attributes);
    this.toolDuration.record(seconds, attributes);
  }

  async flush(): Promise<void> {
    await Promise.allSettled([this.tracerProvider?.forceFlush(), this.meterProvider?.forceFlush()]);
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([this.tracerProvider?.shutdown(), this.meterProvider?.shutdown()]);
  }
}

const STORE_ERROR_ATTRIBUTES = new Map<string, Attributes>();

/** The few error codes a store failure has: one attribute object each, made once. */
function storeErrorAttributes(code: string): Attributes {
  let a = STORE_ERROR_ATTRIBUTES.get(code);
  if (!a) STORE_ERROR_ATTRIBUTES.set(code, (a = { 'error.type': code }));
  return a;
}

/**
 * The pino mixin: the ids of the active log context (http_request_id, agent, tid, oid_hash and, once
 * known, session_id, task_id, request_id: src/common/logging/log-context.ts) and the trace/span ids
 * of the active span, so any line logged while handling a request can be joined to its trace, to
 * the other lines of its task and to the caller's request id. One context lookup and one small
 * object copy per line.
 */
export function activeTraceIds(): LogFields & { trace_id?: string; span_id?: string } {
  const active = context.active();
  const log = LogContext.active();
  const out: LogFields & { trace_id?: string; span_id?: string } = log ? { ...log.fields } : {};
  const span = trace.getSpan(active);
  if (span) {
    const ids = span.spanContext();
    out.trace_id = ids.traceId;
    out.span_id = ids.spanId;
  }
  return out;
}

/** OTLP/HTTP exporters, loaded only when there is a collector to export to (they are not small). */
function otlpExporters(base: string) {
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { OTLPMetricExporter } = require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http');
  return {
    traces: new OTLPTraceExporter({ url: `${base}/v1/traces` }),
    metrics: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
  };
}
