import {
  Attributes,
  context,
  Context,
  Counter,
  createContextKey,
  Histogram,
  Meter,
  propagation,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { TokenUsage } from '../llm/llm-client.port';

export interface TelemetryOptions {
  serviceName: string;
  serviceVersion: string;
  /** OTLP/HTTP base URL (`TA_OTEL_ENDPOINT`): traces go to `/v1/traces`, metrics to `/v1/metrics`. */
  otlpEndpoint?: string;
  metricExportIntervalMs?: number;
}

/** The request's correlation id (`X-Request-Id`), carried in the OTel context for log lines. */
export const REQUEST_ID_KEY = createContextKey('teal-agent-server.request_id');

let contextManagerInstalled = false;

/** Async context must follow `await`s for spans to nest; installed once per process. */
function ensureContextManager(): void {
  if (contextManagerInstalled) return;
  contextManagerInstalled = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/**
 * Tracing and metrics for the whole app, owned by one instance (not the global OTel providers, so
 * two apps in one test process do not share exporters). Spans always exist (trace ids in logs and
 * `traceparent` propagation work without a collector); they are exported only when an OTLP
 * endpoint is configured.
 */
export class Telemetry {
  readonly tracer: Tracer;
  private readonly meter: Meter;
  private readonly tracerProvider: TracerProvider;
  private readonly meterProvider: MeterProvider;
  private readonly propagator = new W3CTraceContextPropagator();
  readonly httpRequests: Counter;
  readonly httpDuration: Histogram;
  readonly invocations: Counter;
  readonly invocationDuration: Histogram;
  readonly tokenUsage: Histogram;

  constructor(options: TelemetryOptions) {
    ensureContextManager();
    const resource = resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': options.serviceVersion,
    });
    const base = options.otlpEndpoint?.replace(/\/+$/, '');
    const otlp = base ? otlpExporters(base) : undefined;
    this.tracerProvider = new TracerProvider({
      resource,
      spanProcessors: otlp ? [new BatchSpanProcessor({ exporter: otlp.traces, scheduledDelayMillis: 1000 })] : [],
    });
    this.meterProvider = new MeterProvider({
      resource,
      readers: otlp
        ? [new PeriodicExportingMetricReader({ exporter: otlp.metrics, exportIntervalMillis: options.metricExportIntervalMs ?? 10_000 })]
        : [],
    });
    this.tracer = this.tracerProvider.getTracer('teal-agent-server', options.serviceVersion);
    this.meter = this.meterProvider.getMeter('teal-agent-server', options.serviceVersion);
    this.httpRequests = this.meter.createCounter('ta.http.server.requests', { description: 'HTTP requests served' });
    this.httpDuration = this.meter.createHistogram('http.server.request.duration', {
      description: 'Duration of HTTP requests',
      unit: 's',
    });
    this.invocations = this.meter.createCounter('ta.agent.invocations', { description: 'Agent invocations' });
    this.invocationDuration = this.meter.createHistogram('ta.agent.invocation.duration', {
      description: 'Duration of agent invocations',
      unit: 's',
    });
    this.tokenUsage = this.meter.createHistogram('gen_ai.client.token.usage', {
      description: 'Tokens used per model call',
      unit: '{token}',
    });
  }

  /** The parent context carried by a request's `traceparent`/`tracestate` headers (W3C). */
  extract(headers: Record<string, string | string[] | undefined>): Context {
    return this.propagator.extract(ROOT_CONTEXT, headers, {
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
    if (usage.prompt_tokens) this.tokenUsage.record(usage.prompt_tokens, { ...attributes, 'gen_ai.token.type': 'input' });
    if (usage.completion_tokens) {
      this.tokenUsage.record(usage.completion_tokens, { ...attributes, 'gen_ai.token.type': 'output' });
    }
  }

  async flush(): Promise<void> {
    await Promise.allSettled([this.tracerProvider.forceFlush(), this.meterProvider.forceFlush()]);
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled([this.tracerProvider.shutdown(), this.meterProvider.shutdown()]);
  }
}

/**
 * The pino mixin: trace/span ids of the active span and the id of the request being served, so any
 * line logged while handling a request can be joined to its trace and to the caller's request id.
 */
export function activeTraceIds(): { trace_id?: string; span_id?: string; request_id?: string } {
  const active = context.active();
  const requestId = active.getValue(REQUEST_ID_KEY) as string | undefined;
  const span = trace.getSpan(active);
  const out: { trace_id?: string; span_id?: string; request_id?: string } = {};
  if (span) {
    const ids = span.spanContext();
    out.trace_id = ids.traceId;
    out.span_id = ids.spanId;
  }
  if (requestId) out.request_id = requestId;
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
