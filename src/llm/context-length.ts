// The error module only: the package root loads the whole SDK (~230 modules), which the server
// otherwise loads on the first model call (llm-provider.ts).
import { APIError } from 'openai/core/error';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';

/** Wordings of OpenAI-compatible servers that do not send `code: context_length_exceeded`. */
const TOO_LONG = /maximum context length|context[_ ]length[_ ]exceeded|prompt is too long|input is too long|too many tokens/i;

/**
 * The model refused the input as longer than its context window (OpenAI and Azure: 400 with
 * `code: context_length_exceeded`). Mapped errors keep the provider's error as their cause.
 */
export function isContextLengthExceeded(err: unknown): boolean {
  if (!(err instanceof DomainError) || err.code !== ErrorCode.LLM_REQUEST_REJECTED) return false;
  const cause = err.cause;
  if (!(cause instanceof APIError) || cause.status !== 400) return false;
  return cause.code === 'context_length_exceeded' || TOO_LONG.test(cause.message);
}
