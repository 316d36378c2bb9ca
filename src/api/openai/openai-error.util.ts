import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { ProblemDetails } from '../../common/errors/problem-details';

/** OpenAI's error body: what its clients parse (`APIError.type`, `.code`, `.param`). */
export interface OpenAiErrorBody {
  error: { message: string; type: string; code: string; param: string | null; error_id?: string };
}

/**
 * An error only this front door has: OpenAI's own `code` (and the parameter at fault) where its
 * clients expect one, e.g. `model_not_found` for a `model` that names no agent of ours.
 */
export class OpenAiRequestError extends DomainError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly openAiCode: string,
    readonly param: string | null,
  ) {
    super(code, message);
  }
}

export function modelNotFound(model: string): OpenAiRequestError {
  return new OpenAiRequestError(ErrorCode.ROUTE_NOT_FOUND, `The model '${model}' does not exist or you do not have access to it.`, 'model_not_found', 'model');
}

/**
 * Our problem details in OpenAI's shape, with the status OpenAI's clients read the same way: a
 * request that fails validation is 400 (OpenAI's BadRequestError; ours is 422), everything else
 * keeps our status. `code` is our stable error code (docs/api.md, Status codes), `param` the first
 * field at fault, `type` OpenAI's class of error; a 500 keeps its `error_id`.
 */
export function openAiErrorOf(problem: ProblemDetails, exception?: unknown): { status: number; body: OpenAiErrorBody } {
  const own = exception instanceof OpenAiRequestError ? exception : undefined;
  const status = problem.code === ErrorCode.VALIDATION_FAILED ? 400 : problem.status;
  const error: OpenAiErrorBody['error'] = {
    message: problem.detail || problem.title,
    type: errorTypeOf(problem.code, status),
    code: own?.openAiCode ?? problem.code,
    param: own ? own.param : (problem.errors?.[0]?.field ?? null) || null,
  };
  if (problem.error_id) error.error_id = problem.error_id;
  return { status, body: { error } };
}

/** OpenAI's error types, by what went wrong. */
export function errorTypeOf(code: ErrorCode, status: number): string {
  if (code === ErrorCode.UNAUTHENTICATED) return 'authentication_error';
  if (code === ErrorCode.FORBIDDEN || code === ErrorCode.NOT_OWNER) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}
