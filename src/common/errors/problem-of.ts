import { newUuid } from '../ids/uuid.util';
import type { Logger } from 'pino';
import { ErrorCode } from './error-code';
import { buildProblem, ProblemDetails } from './problem-details';
import { toDomainError } from './to-domain-error';

/**
 * Anything thrown, as the problem details a client receives: the global filter's answer and every
 * stream's `error` frame are built here. A known domain error keeps its code (and `errors[]` for a
 * 422); a bug or unreadable state is a 500 with an `error_id` that is logged with the original
 * error and `context` (request id, task id), so the client has something to quote.
 */
export function problemOf(exception: unknown, instance: string, logger: Logger, context: Record<string, unknown> = {}): ProblemDetails {
  const domain = toDomainError(exception);
  if (domain) {
    if (domain.code === ErrorCode.INTERNAL || domain.code === ErrorCode.STATE_CORRUPT) {
      const errorId = newUuid();
      logger.error({ err: domain.cause ?? domain, error_id: errorId, code: domain.code, path: instance, ...context }, domain.message);
      return buildProblem(domain.code, domain.message, instance, { errorId, extensions: domain.extensions });
    }
    return buildProblem(domain.code, domain.message, instance, { errors: domain.errors, extensions: domain.extensions });
  }
  const errorId = newUuid();
  logger.error({ err: exception, error_id: errorId, path: instance, ...context }, 'unhandled error');
  return buildProblem(ErrorCode.INTERNAL, `An unexpected error occurred (error_id ${errorId})`, instance, { errorId });
}
