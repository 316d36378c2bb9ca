import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { Observable } from 'rxjs';
import { AgentDefinition } from '../agents/config/agent-definition';
import { AGENT_ROUTE } from '../api/common/agent-route';
import { LOGGER, TELEMETRY } from '../app.tokens';
import { Telemetry } from './telemetry';

/**
 * The one telemetry interceptor, global, so every API version inherits it: a SERVER span per HTTP
 * request (child of the caller's W3C `traceparent`), request count and duration metrics, and one
 * structured log line per request carrying the trace id and request id. The span ends when the
 * response closes, so a streamed (SSE) response is measured whole.
 */
@Injectable()
export class TelemetryInterceptor implements NestInterceptor {
  constructor(
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly reflector: Reflector,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() !== 'http') return next.handle();
    const req = ctx.switchToHttp().getRequest<Request>();
    const res = ctx.switchToHttp().getResponse<Response>();
    const agent = this.reflector.get<AgentDefinition | undefined>(AGENT_ROUTE, ctx.getClass());
    const route = (req.route as { path?: string } | undefined)?.path ?? req.path;
    const attributes = {
      'http.request.method': req.method,
      'http.route': route,
      'url.path': req.path,
      ...(agent
        ? { 'ta.agent.name': agent.name, 'ta.agent.version': agent.version, 'gen_ai.request.model': agent.agent.model }
        : {}),
      ...(req.requestId ? { 'ta.http.request_id': req.requestId } : {}),
    };
    const parent = this.telemetry.extract(req.headers);
    const span = this.telemetry.startServerSpan(`${req.method} ${route}`, parent, attributes);
    const started = performance.now();
    const { traceId, spanId } = span.spanContext();
    res.setHeader('traceresponse', `00-${traceId}-${spanId}-01`);

    res.once('close', () => {
      const status = res.statusCode;
      const seconds = (performance.now() - started) / 1000;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      const metricAttrs = {
        'http.request.method': req.method,
        'http.route': route,
        'http.response.status_code': status,
        ...(agent ? { 'ta.agent.name': agent.name, 'ta.agent.version': agent.version } : {}),
      };
      this.telemetry.httpRequests.add(1, metricAttrs);
      this.telemetry.httpDuration.record(seconds, metricAttrs);
      this.logger[status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info'](
        {
          trace_id: traceId,
          span_id: spanId,
          request_id: req.requestId,
          method: req.method,
          path: req.originalUrl,
          status,
          duration_ms: Math.round(seconds * 1000),
          agent: agent?.source,
          aborted: !res.writableFinished,
        },
        'request completed',
      );
    });

    const active = trace.setSpan(parent, span);
    // Subscribing inside the span's context makes the handler (and everything it awaits) a child of it.
    return new Observable((subscriber) => context.with(active, () => next.handle().subscribe(subscriber)));
  }
}
