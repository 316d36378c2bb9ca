import { Attributes, Context, context, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { agentAttributes } from './http-request-telemetry';
import { LogContext } from '../common/logging/log-context';
import { Telemetry } from './telemetry';
import { pathOf } from '../common/http/url-path';

/** Close codes of a socket that ended as expected: done, shutting down, or closed without a code. */
const ORDINARY_CLOSE = new Set([1000, 1001, 1005]);

/**
 * The telemetry of one WebSocket upgrade request, which Express never sees: the counterpart of
 * HttpRequestTelemetry with the same SERVER span (child of the caller's `traceparent`), the same
 * request count and duration metrics and the same `request completed` log line, all finished when
 * the socket closes, so a stream is measured whole. The status is 101 for an accepted socket (and
 * the line carries the close code) or the status of the refusal.
 */
export class UpgradeRequestTelemetry {
  /** The context the socket's work runs in: the SERVER span and the request id (for log lines). */
  readonly context: Context;
  readonly span: Span;
  /** The ids its log lines carry (src/common/logging/log-context.ts). */
  readonly log: LogContext;
  private readonly started = performance.now();
  private finished = false;

  constructor(
    private readonly telemetry: Telemetry,
    private readonly logger: Logger,
    private readonly req: IncomingMessage,
    private readonly requestId: string,
    private readonly route?: string,
    private readonly agent?: AgentDefinition,
  ) {
    const parent = telemetry.extract(req.headers);
    this.span = telemetry.startServerSpan(route ? `GET ${route}` : 'GET', parent, {
      'http.request.method': req.method ?? 'GET',
      'url.path': this.path(),
      'url.scheme': (req.socket as TLSSocket).encrypted ? 'https' : 'http',
      ...(req.headers['user-agent'] ? { 'user_agent.original': req.headers['user-agent'] } : {}),
      'ta.http.request_id': requestId,
      ...(route ? { 'http.route': route } : {}),
      ...this.agentAttributes(true),
    });
    this.log = new LogContext({ http_request_id: requestId, agent: agent?.source }, this.span);
    this.context = this.log.in(trace.setSpan(parent, this.span));
  }

  /** `traceresponse` (W3C Trace Context Level 2 draft), as every HTTP response carries. */
  traceresponse(): string {
    const { traceId, spanId } = this.span.spanContext();
    return `00-${traceId}-${spanId}-01`;
  }

  /** Ends the span, counts the request and logs it; later calls do nothing. */
  finish(status: number, closeCode?: number): void {
    if (this.finished) return;
    this.finished = true;
    const seconds = (performance.now() - this.started) / 1000;
    this.span.setAttribute('http.response.status_code', status);
    if (closeCode !== undefined) this.span.setAttribute('ta.websocket.close_code', closeCode);
    const failed = status >= 500 || closeCode === 1011;
    if (failed) {
      this.span.setAttribute('error.type', closeCode === 1011 ? 'websocket 1011' : String(status));
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();

    const metricAttrs: Attributes = {
      'http.request.method': this.req.method ?? 'GET',
      'http.response.status_code': status,
      ...(this.route ? { 'http.route': this.route } : {}),
      ...this.agentAttributes(false),
    };
    this.telemetry.httpRequests.add(1, metricAttrs);
    this.telemetry.httpDuration.record(seconds, metricAttrs);
    const { traceId, spanId } = this.span.spanContext();
    const level = failed ? 'error' : status >= 400 || (closeCode !== undefined && !ORDINARY_CLOSE.has(closeCode)) ? 'warn' : 'info';
    context.with(this.context, () =>
      this.logger[level](
        {
          trace_id: traceId,
          span_id: spanId,
          http_request_id: this.requestId,
          method: this.req.method,
          path: this.path(),
          route: this.route,
          status,
          close_code: closeCode,
          duration_ms: Math.round(seconds * 1000),
          agent: this.agent?.source,
        },
        'request completed',
      ),
    );
  }

  /** Without the query string: it is the one part of the line a caller controls freely. */
  private path(): string {
    return pathOf(this.req.url ?? '/');
  }

  private agentAttributes(withModel: boolean): Attributes {
    return agentAttributes(this.agent, withModel);
  }
}
