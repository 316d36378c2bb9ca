import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
// Thrown by the SDK's parse helpers; not re-exported from the package root.
import { ContentFilterFinishReasonError } from 'openai/core/error';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { llmErrorOfStatus } from './provider-status.mapper';

/**
 * The SDK's errors (streamed calls) become domain errors: transport failures by SDK class (the SDK
 * has already retried what it retries), HTTP error answers by status as for our own completions
 * client (provider-status.mapper.ts). Provider messages are not copied into ours.
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
  if (err instanceof APIError && err.status !== undefined) {
    return llmErrorOfStatus({ status: err.status, code: err.code, message: err.message, header: (name) => err.headers?.get(name) }, err);
  }
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider failed', { cause: err });
}
