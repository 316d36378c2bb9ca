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
  /** Members added to the problem body (RFC 7807 extension members), e.g. the ids of the Failed request. */
  extensions?: Record<string, string>;
}

/**
 * The only error type services throw. It knows nothing of HTTP: the global filter maps `code` to a
 * status. Services never import `@nestjs/common` exceptions.
 */
export class DomainError extends Error {
  readonly errors?: FieldError[];
  readonly retryAfter?: number;
  readonly headers?: Record<string, string>;
  readonly extensions?: Record<string, string>;

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
    this.extensions = options.extensions;
  }

  /** The same error with `extensions` added to its problem body. */
  withExtensions(extensions: Record<string, string>): DomainError {
    const copy = new DomainError(this.code, this.message, {
      errors: this.errors,
      retryAfter: this.retryAfter,
      headers: this.headers,
      cause: this.cause,
      extensions: { ...this.extensions, ...extensions },
    });
    copy.stack = this.stack;
    return copy;
  }
}
