import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { context } from '@opentelemetry/api';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { Observable } from 'rxjs';
import { AgentDefinition } from '../agents/config/agent-definition';
import { AGENT_OF_REQUEST, AGENT_ROUTE, AgentOfRequest } from '../agents/agent-route.metadata';
import { LOGGER, TELEMETRY } from '../app.tokens';
import { HttpRequestTelemetry } from './http-request-telemetry';
import { Telemetry } from './telemetry';

/**
 * The one telemetry interceptor, global, so every API version inherits it. The request's SERVER
 * span, metrics and log line are started by `httpTelemetryMiddleware` (which also sees requests that
 * never reach a route); this adds what only Nest knows, the route template and the agent, and runs
 * the handler inside the span's context so that everything it awaits (the `invoke_agent` span, log
 * lines) is a child of it. Without the middleware (a minimal app) it starts the telemetry itself.
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
    const t = HttpRequestTelemetry.for(this.telemetry, this.logger, req, res);
    const agent =
      this.reflector.get<AgentDefinition | undefined>(AGENT_ROUTE, ctx.getClass()) ??
      this.reflector.get<AgentOfRequest | undefined>(AGENT_OF_REQUEST, ctx.getClass())?.(req);
    t.matched((req.route as { path?: string } | undefined)?.path ?? req.path, agent);
    // Subscribing inside the span's context makes the handler (and everything it awaits) a child of it.
    return new Observable((subscriber) => context.with(t.context, () => next.handle().subscribe(subscriber)));
  }
}
