import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';

/** Wordings of OpenAI-compatible servers that do not send `code: context_length_exceeded`. */
const TOO_LONG = /maximum context length|context[_ ]length[_ ]exceeded|prompt is too long|input is too long|too many tokens/i;

/**
 * The model refused the input as longer than its context window (OpenAI and Azure: 400 with
 * `code: context_length_exceeded`). Mapped errors keep the provider's error as their cause: our
 * ProviderHttpError or the SDK's APIError (streams), read by shape so that neither is loaded here.
 */
export function isContextLengthExceeded(err: unknown): boolean {
  if (!(err instanceof DomainError) || err.code !== ErrorCode.LLM_REQUEST_REJECTED) return false;
  const cause = err.cause;
  if (!(cause instanceof Error)) return false;
  const { status, code } = cause as { status?: unknown; code?: unknown };
  if (status !== 400) return false;
  return code === 'context_length_exceeded' || TOO_LONG.test(cause.message);
}
