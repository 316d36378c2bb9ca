import type { ProblemDetails } from '../../common/errors/problem-details';
import { ErrorCode } from '../../common/errors/error-code';

/** JSON-RPC error codes: JSON-RPC 2.0's and A2A's (A2A v1.0, section 5.4). */
export const RPC = {
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** JSON-RPC's range for implementation-defined server errors: every error of ours without an A2A counterpart. */
  SERVER_ERROR: -32000,
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
} as const;

/** `google.rpc.ErrorInfo`, as A2A v1.0 carries error details in `data[]`. */
export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
/** The domain of our reasons (our error codes); A2A's own are `a2a-protocol.org`. */
export const ERROR_DOMAIN = 'teal-agent-server';

export interface RpcError {
  code: number;
  message: string;
  data: { '@type': string; reason: string; domain: string; metadata: Record<string, string> }[];
}

/** Codes that read as "task not found": another user's task must look exactly like no task at all. */
const NOT_FOUND = new Set<string>([ErrorCode.TASK_NOT_FOUND, ErrorCode.NOT_OWNER, ErrorCode.REQUEST_NOT_FOUND, ErrorCode.SESSION_NOT_FOUND]);

/**
 * Our problem details as a JSON-RPC error (docs/a2a.md, Errors). Not found (another user's or
 * tenant's included) is A2A's TaskNotFound (-32001) with no more said; nothing to cancel is
 * TaskNotCancelable (-32002); a body that does not fit is invalid params (-32602); a server fault
 * (5xx) is an internal error (-32603); anything else (a stale pause, a busy task, a rate limit) is
 * -32000. `data[0]` is an ErrorInfo whose `reason` is our error code and whose `metadata` holds the
 * HTTP status the REST API would answer and the ids the problem names.
 */
export function rpcErrorOf(problem: ProblemDetails): RpcError {
  const code = String(problem.code ?? ErrorCode.INTERNAL);
  if (NOT_FOUND.has(code)) return { code: RPC.TASK_NOT_FOUND, message: 'Task not found', data: [info(ErrorCode.TASK_NOT_FOUND, { status: '404' })] };
  const status = Number(problem.status) || 500;
  const rpc =
    code === ErrorCode.TASK_NOT_RUNNING
      ? RPC.TASK_NOT_CANCELABLE
      : status === 400 || status === 422
        ? RPC.INVALID_PARAMS
        : status >= 500
          ? RPC.INTERNAL_ERROR
          : RPC.SERVER_ERROR;
  const metadata: Record<string, string> = { status: String(status) };
  for (const [k, v] of Object.entries(problem)) {
    if (['task_id', 'session_id', 'request_id', 'error_id', 'retry_after'].includes(k) && v !== undefined && v !== null) metadata[k] = String(v);
  }
  const errors = (problem as { errors?: { field: string; message: string }[] }).errors;
  if (errors?.length) metadata.errors = JSON.stringify(errors);
  return { code: rpc, message: String(problem.detail ?? problem.title), data: [info(code, metadata)] };
}

function info(reason: string, metadata: Record<string, string>) {
  return { '@type': ERROR_INFO_TYPE, reason, domain: ERROR_DOMAIN, metadata };
}
