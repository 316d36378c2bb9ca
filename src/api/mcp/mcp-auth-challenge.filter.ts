import { ArgumentsHost, Catch, ExceptionFilter, Inject } from '@nestjs/common';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { LOGGER, TELEMETRY } from '../../app.tokens';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { ProblemDetailsFilter } from '../../common/errors/problem-details.filter';
import { toDomainError } from '../../common/errors/to-domain-error';
import type { Telemetry } from '../../telemetry/telemetry';
import { protectedResourceMetadataUrl, publicOrigin } from './protected-resource.util';

/**
 * The MCP routes' errors, answered by the global filter with one addition the MCP authorization
 * specification asks for: a bearer challenge (401, or 403 insufficient_scope) names the
 * protected-resource metadata (`resource_metadata="…"`, RFC 9728 §5.1), so a client finds the
 * authorization server from the refusal. Scoped to the MCP controllers: no other route's answer
 * changes, and nothing runs on other routes.
 */
@Catch()
export class McpAuthChallengeFilter implements ExceptionFilter {
  private readonly problems: ProblemDetailsFilter;

  constructor(@Inject(LOGGER) logger: Logger, @Inject(TELEMETRY) telemetry: Telemetry) {
    this.problems = new ProblemDetailsFilter(logger, telemetry);
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    this.problems.catch(withResourceMetadata(exception, host.switchToHttp().getRequest<Request>()), host);
  }
}

function withResourceMetadata(exception: unknown, req: Request): unknown {
  const err = toDomainError(exception);
  const challenge = err?.headers?.['WWW-Authenticate'];
  if (!err || !challenge?.startsWith('Bearer') || (err.code !== ErrorCode.UNAUTHENTICATED && err.code !== ErrorCode.FORBIDDEN)) return exception;
  const url = protectedResourceMetadataUrl(publicOrigin(req), req.path);
  const headers = { ...err.headers, 'WWW-Authenticate': `${challenge}, resource_metadata="${url}"` };
  return new DomainError(err.code, err.message, { errors: err.errors, retryAfter: err.retryAfter, headers, cause: err.cause, extensions: err.extensions });
}
