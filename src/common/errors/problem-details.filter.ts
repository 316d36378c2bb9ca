import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { SseStream } from '../sse/sse-stream';
import { ErrorCode } from './error-code';
import { PROBLEM_CONTENT_TYPE, ProblemDetails } from './problem-details';
import { problemOf } from './problem-of';
import type { StoreErrorCounter } from './store-error-counter.port';
import { toDomainError } from './to-domain-error';

/**
 * The one exception filter. Every error becomes application/problem+json; anything that is not a
 * known domain error is a 500 whose `error_id` is also logged with the original error (and the
 * request id; the trace id comes from the active span via the logger's mixin). Once an SSE
 * stream has started, the error is sent as an `event: error` frame and the stream is closed: a second
 * response is never attempted.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  constructor(
    private readonly logger: Logger,
    private readonly storeErrors?: StoreErrorCounter,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const problem = this.toProblem(exception, req);
    if (problem.code === ErrorCode.STATE_STORE_UNAVAILABLE || problem.code === ErrorCode.STATE_CORRUPT) this.storeErrors?.recordStoreError(problem.code);

    const stream = SseStream.of(res);
    if (stream?.isOpen && res.headersSent) {
      stream.send('error', problem);
      stream.end();
      return;
    }
    if (res.headersSent) {
      // Nothing sensible can be sent any more; make sure the client sees the connection end.
      res.end();
      return;
    }
    const domain = toDomainError(exception);
    if (domain?.retryAfter !== undefined) res.setHeader('Retry-After', String(Math.max(0, Math.ceil(domain.retryAfter))));
    for (const [k, v] of Object.entries(domain?.headers ?? {})) res.setHeader(k, v);
    res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
  }

  private toProblem(exception: unknown, req: Request): ProblemDetails {
    return problemOf(exception, req.originalUrl ?? req.url, this.logger, { http_request_id: req.requestId });
  }
}
