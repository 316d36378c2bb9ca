import { CallHandler, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { context } from '@opentelemetry/api';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Observable } from 'rxjs';
import { agentOfRoute } from '../agents/agent-route.metadata';
import { LOGGER, TELEMETRY } from '../app.tokens';
import type { PromiseInterceptor } from '../common/http/promise-interceptors';
import { HttpRequestTelemetry } from './http-request-telemetry';
import { Telemetry } from './telemetry';

/**
 * The one telemetry interceptor, global, so every API version inherits it. The request's SERVER
 * span, metrics and log line are started by `httpTelemetryMiddleware` (which also sees requests that
 * never reach a route); this adds what only Nest knows, the route template and the agent, and runs
 * the handler inside the span's context so that everything it awaits (the `invoke_agent` span, log
 * lines) is a child of it, with promises, not rxjs (common/http/promise-interceptors.ts). Without the
 * middleware (a minimal app) it starts the telemetry itself.
 */
@Injectable()
export class TelemetryInterceptor implements PromiseInterceptor {
  constructor(
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const t = this.matched(ctx);
    if (!t) return next.handle();
    // Subscribing inside the span's context makes the handler (and everything it awaits) a child of it.
    // rxjs is loaded here, not with this file: a built server's rxjs is the one bundled with NestJS
    // (scripts/bundle-vendor.mjs), and this path is the fallback (promise interceptors).
    const { Observable } = require('rxjs') as typeof import('rxjs');
    return new Observable((subscriber) => context.with(t.context, () => next.handle().subscribe(subscriber)));
  }

  /** The same without rxjs (common/http/promise-interceptors.ts): the handler is called inside the span's context. */
  aroundHandler(ctx: ExecutionContext, next: () => Promise<unknown>): Promise<unknown> {
    const t = this.matched(ctx);
    return t ? context.with(t.context, next) : next();
  }

  /** The request's telemetry, given what only Nest knows: the route template and the agent. Undefined outside HTTP. */
  private matched(ctx: ExecutionContext): HttpRequestTelemetry | undefined {
    if (ctx.getType() !== 'http') return undefined;
    const req = ctx.switchToHttp().getRequest<Request>();
    const res = ctx.switchToHttp().getResponse<Response>();
    const t = HttpRequestTelemetry.for(this.telemetry, this.logger, req, res);
    t.matched((req.route as { path?: string } | undefined)?.path ?? req.path, agentOfRoute(ctx.getClass(), req));
    return t;
  }
}
