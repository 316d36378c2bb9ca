import { ErrorCode } from './error-code';
import { FieldError } from './domain-error';
import { statusOf } from './error-status';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 7807 body, with our stable `code` and, for validation, `errors[]`. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  errors?: FieldError[];
  error_id?: string;
  /** A v3 run that failed: the ids of its Failed request (task_id, session_id, request_id). */
  [extension: string]: unknown;
}

export function problemTypeFor(code: ErrorCode): string {
  return `urn:teal-agent-server:problem:${code.toLowerCase().replace(/_/g, '-')}`;
}

export function buildProblem(
  code: ErrorCode,
  detail: string,
  instance: string,
  extra: { errors?: FieldError[]; errorId?: string; extensions?: Record<string, string> } = {},
): ProblemDetails {
  const { status, title } = statusOf(code);
  const body: ProblemDetails = { type: problemTypeFor(code), title, status, detail, instance, code, ...extra.extensions };
  if (extra.errors?.length) body.errors = extra.errors;
  if (extra.errorId) body.error_id = extra.errorId;
  return body;
}
