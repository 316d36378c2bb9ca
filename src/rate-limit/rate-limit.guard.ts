import { applyDecorators, CanActivate, ExecutionContext, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import type { Request, Response } from 'express';
import { agentOfRoute } from '../agents/agent-route.metadata';
import { routeMetadata } from '../common/http/route-metadata';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { RateLimiter } from './rate-limiter.service';

declare module 'express-serve-static-core' {
  interface Request {
    /**
     * Set by the RateLimitGuard when it holds a concurrency slot for this request: takes the slot
     * over from the response (which would give it back when it closes) and returns its release, for
     * a handler whose work outlives the response.
     */
    keepRateLimitSlot?: () => () => void;
  }
}

/**
 * Admits a request to an agent route under the agent's rate limits (RateLimiter), after the
 * AuthGuard named the caller. Sets the RateLimit headers; a concurrency slot is held until the
 * response closes (finished, failed or the client left), which covers SSE streams to their end, or
 * until a background run the handler keeps it for ends (keepRateLimitSlot).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(private readonly limiter: RateLimiter) {}

  /** Synchronous for an agent without limits (most requests): no promise to make and await. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    const agent = agentOfRoute(context.getClass(), req);
    if (!agent || !this.limiter.limitsOf(agent)) return true;
    if (!req.principal) return true; // public routes are never agent invocations
    // A v3 stream reconnect (`Last-Event-ID`) replays a running request: it invokes nothing.
    if (req.header('last-event-id') && routeMetadata<boolean>(RECONNECTS_FREE, context.getHandler())) return true;
    return this.admit(agent, req, context.switchToHttp().getResponse<Response>());
  }

  private async admit(agent: AgentDefinition, req: Request, res: Response): Promise<boolean> {
    const admission = await this.limiter.admit(agent, req.principal!);
    if (!admission) return true;
    for (const [name, value] of Object.entries(admission.headers)) res.setHeader(name, value);
    if (res.writableFinished || res.destroyed) {
      admission.release();
      return true;
    }
    res.once('close', admission.release);
    // A run that goes on after its answer (Prefer: respond-async) keeps the slot until it ends.
    req.keepRateLimitSlot = () => {
      res.off('close', admission.release);
      return admission.release;
    };
    return true;
  }
}

const RECONNECTS_FREE = 'ta:rate-limit:reconnects-free';

/**
 * Marks an agent route that invokes the model: it counts against the agent's rate limits.
 * `reconnectsFree`: a request with `Last-Event-ID` (a stream reconnect) is not counted.
 */
export const RateLimited = (options: { reconnectsFree?: boolean } = {}) =>
  options.reconnectsFree ? applyDecorators(SetMetadata(RECONNECTS_FREE, true), UseGuards(RateLimitGuard)) : applyDecorators(UseGuards(RateLimitGuard));
