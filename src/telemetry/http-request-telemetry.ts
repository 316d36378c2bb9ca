import { Attributes, Context, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { LogContext } from '../common/logging/log-context';
import { plainLine, PlainValue } from '../common/logging/log-line';
import { Telemetry } from './telemetry';
import { pathOf } from '../common/http/url-path';

/**
 * Each request's telemetry, on the request itself. Not in a WeakMap keyed by the request: V8's
 * young-generation collector (the scavenger) keeps a WeakMap entry's value alive whatever its key,
 * and the value holds the request (and its response, span and log context), so every request's
 * objects lived through two scavenges and were promoted to the old generation, to be marked and
 * freed by the concurrent major GC: ~5 KB of each GET /health/live and ~6 KB of each v3 turn
 * (`--trace-gc-nvp`, issue 27). A property goes with its request (and its response, whose `close`
 * listener finds it there).
 */
const TELEMETRY = Symbol('ta.http-request-telemetry');
type WithTelemetry = (Request | Response) & { [TELEMETRY]?: HttpRequestTelemetry };

/**
 * The telemetry of one HTTP request: its SERVER span (child of the caller's W3C `traceparent`), the
 * request count and duration metrics, and the one `request completed` log line. Started by the
 * first Express middleware, so requests that never reach a route (404, 413, 415) are measured and
 * logged too; the global interceptor later adds what only Nest knows (route template, agent).
 * Everything is finished when the response closes, so a streamed (SSE) response is measured whole.
 */
export class HttpRequestTelemetry {
  /** The context that handlers run in: the SERVER span and the request's log context. */
  readonly context: Context;
  /** The ids its log lines carry, filled in as they become known (src/common/logging/log-context.ts). */
  readonly log: LogContext;
  private route?: string;
  private agent?: AgentDefinition;
  private readonly started = performance.now();

  private constructor(
    private readonly telemetry: Telemetry,
    private readonly logger: Logger,
    private readonly req: Request,
    private readonly res: Response,
    readonly span: Span,
    parent: Context,
  ) {
    this.log = new LogContext({ http_request_id: req.requestId }, span);
    req.logContext = this.log;
    this.context = this.log.in(trace.setSpan(parent, span));
    (res as WithTelemetry)[TELEMETRY] = this;
    res.once('close', HttpRequestTelemetry.finishOnClose);
  }

  /** The request's telemetry, started now if the middleware did not run (minimal apps, tests). */
  static for(telemetry: Telemetry, logger: Logger, req: Request, res: Response): HttpRequestTelemetry {
    const existing = (req as WithTelemetry)[TELEMETRY];
    if (existing) return existing;
    const parent = telemetry.extract(req.headers);
    // Named by method only until the route is known (OTel HTTP semantic conventions).
    const span = telemetry.startServerSpan(req.method, parent, {
      'http.request.method': req.method,
      'url.path': req.path,
      'url.scheme': req.protocol,
      ...(req.headers['user-agent'] ? { 'user_agent.original': req.headers['user-agent'] } : {}),
      ...(req.requestId ? { 'ta.http.request_id': req.requestId } : {}),
    });
    const { traceId, spanId } = span.spanContext();
    // Lets a caller without a tracer of its own find the trace (W3C Trace Context Level 2 draft).
    res.setHeader('traceresponse', `00-${traceId}-${spanId}-01`);
    const created = new HttpRequestTelemetry(telemetry, logger, req, res, span, parent);
    (req as WithTelemetry)[TELEMETRY] = created;
    return created;
  }

  static of(req: Request): HttpRequestTelemetry | undefined {
    return (req as WithTelemetry)[TELEMETRY];
  }

  /** Called once the route matched: `route` is its template (`/Agent/0.1/tasks/:task_id`). */
  matched(route: string, agent?: AgentDefinition): void {
    this.route = route;
    this.agent = agent;
    this.span.updateName(`${this.req.method} ${route}`);
    this.span.setAttributes({ 'http.route': route, ...this.agentAttributes(true) });
    if (agent) this.log.set({ agent: agent.source });
  }

  /** Fields that tie a log line to this request. */
  logFields(): { trace_id: string; span_id: string; http_request_id?: string } {
    const { traceId, spanId } = this.span.spanContext();
    return { trace_id: traceId, span_id: spanId, http_request_id: this.req.requestId };
  }

  private agentAttributes(withModel: boolean): Attributes {
    return agentAttributes(this.agent, withModel);
  }

  /**
   * The response's `close` listener, one function for every request (`this` is the response): a
   * closure made per request over its telemetry would keep the request's objects through V8's young
   * collections, as the WeakMap did (see TELEMETRY).
   */
  private static finishOnClose(this: Response): void {
    (this as WithTelemetry)[TELEMETRY]?.finish();
  }

  private finish(): void {
    const { req, res, span } = this;
    const status = res.statusCode;
    const seconds = (performance.now() - this.started) / 1000;
    const aborted = !res.writableFinished;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (aborted) span.addEvent('client disconnected');
    span.end();

    const metricAttrs: Attributes = {
      'http.request.method': req.method,
      'http.response.status_code': status,
      ...(this.route ? { 'http.route': this.route } : {}),
      ...this.agentAttributes(false),
    };
    this.telemetry.httpRequests.add(1, metricAttrs);
    this.telemetry.httpDuration.record(seconds, metricAttrs);
    // What the logger's mixin (activeTraceIds) adds in this request's context, then this line's own.
    const fields: Record<string, PlainValue> = { ...this.log.fields, ...this.logFields() };
    fields.method = req.method;
    // Without the query string: it is the one part of this line a caller controls freely.
    fields.path = pathOf(req.originalUrl);
    fields.route = this.route;
    fields.status = status;
    fields.duration_ms = Math.round(seconds * 1000);
    fields.agent = this.agent?.source;
    fields.aborted = aborted;
    plainLine(this.logger, levelFor(status, this.route), fields, 'request completed');
  }
}

/** Probes and scrapes are polled every few seconds: successful ones log at debug only. */
function levelFor(status: number, route: string | undefined): 'error' | 'warn' | 'info' | 'debug' {
  if (status >= 500) return 'error';
  if (status >= 400) return 'warn';
  return route && (/\/health(\/live|\/ready)?$/.test(route) || route === '/metrics') ? 'debug' : 'info';
}

/** The agent's span and metric attributes (the model only where it is not a metric label). */
export function agentAttributes(agent: AgentDefinition | undefined, withModel: boolean): Attributes {
  if (!agent) return {};
  return {
    'ta.agent.name': agent.name,
    'ta.agent.version': agent.version,
    ...(withModel ? { 'gen_ai.request.model': agent.agent.model } : {}),
  };
}
