import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';

/** A response header by (lower-case) name; `Headers.get` or a lookup in Node's headers object. */
export type HeaderOf = (name: string) => string | null | undefined;

/** What a provider's error answer says: its status, its error `code` and message, its headers. */
export interface ProviderRefusal {
  status: number;
  code?: string | null;
  message: string;
  header: HeaderOf;
}

/**
 * A provider's HTTP error answer becomes a domain error by status, whichever client received it
 * (ours for completions, the SDK's for streams): rate limit → 429 with Retry-After, 408/504 →
 * timeout, other 4xx (bad request, auth, permission, unknown model) → 502 LLM_REQUEST_REJECTED,
 * since the caller did nothing wrong; 5xx → 502 LLM_UNAVAILABLE. Provider messages are not copied
 * into ours: they can quote the (masked) key.
 */
export function llmErrorOfStatus(refusal: ProviderRefusal, cause: unknown): DomainError {
  const { status } = refusal;
  if (status === 429) {
    return new DomainError(ErrorCode.LLM_RATE_LIMITED, 'The model provider is rate limiting requests', {
      cause,
      retryAfter: retryAfterSeconds(refusal.header) ?? 1,
    });
  }
  if (status === 401 || status === 403) {
    return new DomainError(ErrorCode.LLM_REQUEST_REJECTED, `The model provider refused the credentials (HTTP ${status})`, { cause });
  }
  if (isContentFilter(refusal)) {
    return new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the content', { cause });
  }
  if (status === 408 || status === 504) {
    return new DomainError(ErrorCode.LLM_TIMEOUT, `The model provider timed out (HTTP ${status})`, { cause });
  }
  if (status >= 400 && status < 500) {
    const what = status === 404 ? 'does not know the model or deployment' : 'rejected the request';
    return new DomainError(ErrorCode.LLM_REQUEST_REJECTED, `The model provider ${what} (HTTP ${status})`, { cause });
  }
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, `The model provider failed (HTTP ${status})`, { cause });
}

/** Azure answers a filtered prompt with 400 and `code: content_filter`; others say it in the message. */
function isContentFilter(refusal: ProviderRefusal): boolean {
  if (refusal.code === 'content_filter') return true;
  return refusal.status === 400 && /content[_ ]?filter|content management policy/i.test(refusal.message);
}

/** Whole seconds to wait, as the provider asked (providerDelayMs), never below 0. */
export function retryAfterSeconds(header: HeaderOf): number | undefined {
  const ms = providerDelayMs(header);
  return ms === undefined ? undefined : Math.max(0, Math.ceil(ms / 1000));
}

/**
 * The wait the provider asked for, in ms: its `retry-after-ms`, else `retry-after` in seconds or as
 * an HTTP date (then possibly past: below 0). Undefined when it said nothing readable. Read by both
 * the 429 we answer (retryAfterSeconds) and the wait before our own retry (model-retry.policy.ts).
 */
export function providerDelayMs(header: HeaderOf): number | undefined {
  const ms = header('retry-after-ms');
  if (ms && !Number.isNaN(Number(ms))) return Number(ms);
  const raw = header('retry-after');
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (!Number.isNaN(seconds)) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : date - Date.now();
}
