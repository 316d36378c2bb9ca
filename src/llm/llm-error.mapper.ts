import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AuthenticationError,
  PermissionDeniedError,
  RateLimitError,
} from 'openai';
// Thrown by the SDK's parse helpers; not re-exported from the package root.
import { ContentFilterFinishReasonError } from 'openai/core/error';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';

/**
 * Provider errors become domain errors by SDK class (the SDK has already retried what it retries):
 * rate limit → 429 with Retry-After, timeout → 504, unreachable or 5xx → 502, a request the provider
 * refuses (bad request, auth, permission, unknown model) → 502 LLM_REQUEST_REJECTED: the caller did
 * nothing wrong. Provider messages are not copied into ours: they can quote the (masked) key.
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
  if (err instanceof ContentFilterFinishReasonError) {
    return new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the answer', { cause: err });
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
  if (err instanceof APIError) {
    const status = err.status;
    if (isContentFilter(err)) {
      return new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the content', { cause: err });
    }
    if (status === 408 || status === 504) {
      return new DomainError(ErrorCode.LLM_TIMEOUT, `The model provider timed out (HTTP ${status})`, { cause: err });
    }
    if (status !== undefined && status >= 400 && status < 500) {
      const what = status === 404 ? 'does not know the model or deployment' : 'rejected the request';
      return new DomainError(ErrorCode.LLM_REQUEST_REJECTED, `The model provider ${what} (HTTP ${status})`, { cause: err });
    }
    return new DomainError(
      ErrorCode.LLM_UNAVAILABLE,
      status ? `The model provider failed (HTTP ${status})` : 'The model provider failed',
      { cause: err },
    );
  }
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider failed', { cause: err });
}

/** Azure answers a filtered prompt with 400 and `code: content_filter`; others say it in the message. */
function isContentFilter(err: APIError): boolean {
  if (err.code === 'content_filter') return true;
  return err.status === 400 && /content[_ ]?filter|content management policy/i.test(err.message);
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
