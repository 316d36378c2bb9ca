import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  PermissionDeniedError,
  RateLimitError,
} from 'openai';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';

/**
 * Provider errors become domain errors by SDK class (the SDK has already retried what it retries):
 * rate limit → 429 with Retry-After, timeout → 504, unreachable or 5xx → 502, a request the provider
 * refuses (bad request, auth, permission) → 502 LLM_REQUEST_REJECTED: the caller did nothing wrong.
 */
export function mapLlmError(err: unknown, signal?: AbortSignal): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof APIUserAbortError || signal?.aborted) {
    return new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled', { cause: err });
  }
  if (err instanceof APIConnectionTimeoutError) {
    return new DomainError(ErrorCode.LLM_TIMEOUT, 'The model provider did not answer in time', { cause: err });
  }
  if (err instanceof APIConnectionError) {
    return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider could not be reached', { cause: err });
  }
  if (err instanceof RateLimitError) {
    return new DomainError(ErrorCode.LLM_RATE_LIMITED, 'The model provider is rate limiting requests', {
      cause: err,
      retryAfter: retryAfterSeconds(err.headers) ?? 1,
    });
  }
  if (err instanceof AuthenticationError || err instanceof PermissionDeniedError) {
    return new DomainError(ErrorCode.LLM_REQUEST_REJECTED, `The model provider refused the credentials (HTTP ${err.status})`, {
      cause: err,
    });
  }
  if (err instanceof BadRequestError) {
    const filtered = /content[_ ]?filter|content management policy/i.test(err.message);
    return new DomainError(
      filtered ? ErrorCode.LLM_CONTENT_FILTERED : ErrorCode.LLM_REQUEST_REJECTED,
      filtered ? 'The model provider filtered the content' : `The model provider rejected the request (HTTP 400)`,
      { cause: err },
    );
  }
  if (err instanceof APIError) {
    if (err.status === 408 || err.status === 504) {
      return new DomainError(ErrorCode.LLM_TIMEOUT, `The model provider timed out (HTTP ${err.status})`, { cause: err });
    }
    return new DomainError(
      ErrorCode.LLM_UNAVAILABLE,
      err.status ? `The model provider failed (HTTP ${err.status})` : 'The model provider failed',
      { cause: err },
    );
  }
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider failed', { cause: err });
}

function retryAfterSeconds(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && !Number.isNaN(Number(ms))) return Math.ceil(Number(ms) / 1000);
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const secs = Number(raw);
  if (!Number.isNaN(secs)) return Math.ceil(secs);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
