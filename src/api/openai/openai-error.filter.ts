import { ArgumentsHost, Catch, ExceptionFilter, Inject } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { LOGGER, TELEMETRY } from '../../app.tokens';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import type { StoreErrorCounter } from '../../common/errors/store-error-counter.port';
import { toDomainError } from '../../common/errors/to-domain-error';
import { openAiErrorOf } from './openai-error.util';

/**
 * The OpenAI-compatible routes' filter (the global one answers every other route): errors in
 * OpenAI's shape, `{error: {message, type, code, param}}`, with our code. Bound to the controller,
 * so it also catches the auth and rate-limit guards' refusals (401, 403, 429, with their
 * `WWW-Authenticate`, `Retry-After` and RateLimit headers). A stream that has started reports the
 * error as a last `data: {"error": ...}` chunk (what the `openai` client throws as an APIError).
 */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(TELEMETRY) private readonly storeErrors: StoreErrorCounter,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    const problem = problemOf(exception, req.originalUrl ?? req.url, this.logger, { http_request_id: req.requestId });
    // Counted as the global filter counts them (`ta.state_store.errors`).
    if (problem.code === ErrorCode.STATE_STORE_UNAVAILABLE || problem.code === ErrorCode.STATE_CORRUPT) this.storeErrors.recordStoreError(problem.code);
    const { status, body } = openAiErrorOf(problem, exception);
    if (res.headersSent) {
      if (!res.writableEnded) res.end(`data: ${JSON.stringify(body)}\n\n`);
      return;
    }
    const domain = toDomainError(exception);
    if (domain?.retryAfter !== undefined) res.setHeader('Retry-After', String(Math.max(0, Math.ceil(domain.retryAfter))));
    for (const [k, v] of Object.entries(domain?.headers ?? {})) res.setHeader(k, v);
    res.status(status).json(body);
  }
}
