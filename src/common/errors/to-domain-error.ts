import { HttpException } from '@nestjs/common';
import { DomainError } from './domain-error';
import { ErrorCode } from './error-code';

/** Body-parser errors carry a `type` string and a status; they arrive before any route runs. */
interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
}

const HTTP_STATUS_CODES: Record<number, ErrorCode> = {
  // A Nest pipe's BadRequestException is a request-shape problem, not a bug: 422, not 500.
  400: ErrorCode.VALIDATION_FAILED,
  401: ErrorCode.UNAUTHENTICATED,
  403: ErrorCode.FORBIDDEN,
  404: ErrorCode.ROUTE_NOT_FOUND,
  405: ErrorCode.METHOD_NOT_ALLOWED,
  413: ErrorCode.PAYLOAD_TOO_LARGE,
  415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  422: ErrorCode.VALIDATION_FAILED,
};

/**
 * Normalises anything thrown into a DomainError, or undefined when the error is unexpected (a bug:
 * the filter answers 500 with an error id and logs the original).
 */
export function toDomainError(err: unknown): DomainError | undefined {
  if (err instanceof DomainError) return err;
  // Nest wraps errors raised by Express-level middleware (the body parser) in an HttpException.
  if (err instanceof HttpException && err.cause && typeof err.cause === 'object') {
    const inner = toDomainError(err.cause);
    if (inner) return inner;
  }
  const bp = err as BodyParserError;
  if (bp && typeof bp === 'object' && typeof bp.type === 'string' && bp.type.startsWith('entity.')) {
    if (bp.type === 'entity.too.large') {
      return new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, 'The request body is larger than the configured limit');
    }
    if (bp.type === 'entity.parse.failed') {
      // Also a top-level scalar (`"text"`, `null`): the parser's strict mode takes only objects and arrays.
      return new DomainError(ErrorCode.MALFORMED_JSON, 'The request body is not valid JSON: a JSON object is expected');
    }
    return new DomainError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'The request body could not be read');
  }
  if (err instanceof HttpException) {
    const code = HTTP_STATUS_CODES[err.getStatus()];
    if (code) return new DomainError(code, code === ErrorCode.ROUTE_NOT_FOUND ? 'No such route' : err.message);
  }
  return undefined;
}
