import { ErrorCode } from './error-code';

/** One invalid field, as reported in `errors[]` of a 422. `field` is a dotted path (`items.0.content`). */
export interface FieldError {
  field: string;
  message: string;
}

export interface DomainErrorOptions {
  errors?: FieldError[];
  /** Seconds, sent as `Retry-After` (rate limits, busy upstreams). */
  retryAfter?: number;
  /** Extra response headers (e.g. `WWW-Authenticate`). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * The only error type services throw. It knows nothing of HTTP: the global filter maps `code` to a
 * status. Services never import `@nestjs/common` exceptions.
 */
export class DomainError extends Error {
  readonly errors?: FieldError[];
  readonly retryAfter?: number;
  readonly headers?: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: DomainErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DomainError';
    this.errors = options.errors;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers;
  }
}
