import { ErrorCode } from './error-code';

interface StatusEntry {
  status: number;
  title: string;
}

/**
 * The one place where a domain error code becomes an HTTP status. `satisfies Record<ErrorCode, …>`
 * makes a new code without an entry a compile error, so nothing falls through to a default.
 */
export const ERROR_STATUS = {
  [ErrorCode.VALIDATION_FAILED]: { status: 422, title: 'Validation failed' },
  [ErrorCode.INVALID_IDEMPOTENCY_KEY]: { status: 400, title: 'Invalid Idempotency-Key' },
  [ErrorCode.IDEMPOTENCY_KEY_REUSED]: { status: 422, title: 'Idempotency-Key reused with another request' },
  [ErrorCode.INVALID_CURSOR]: { status: 422, title: 'Invalid cursor' },
  [ErrorCode.MALFORMED_JSON]: { status: 415, title: 'Body is not valid JSON' },
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: { status: 415, title: 'Unsupported media type' },
  [ErrorCode.PAYLOAD_TOO_LARGE]: { status: 413, title: 'Payload too large' },
  [ErrorCode.ROUTE_NOT_FOUND]: { status: 404, title: 'Not found' },
  [ErrorCode.METHOD_NOT_ALLOWED]: { status: 405, title: 'Method not allowed' },
  [ErrorCode.CORS_ORIGIN_NOT_ALLOWED]: { status: 403, title: 'Origin not allowed' },
  [ErrorCode.UNAUTHENTICATED]: { status: 401, title: 'Unauthenticated' },
  [ErrorCode.FORBIDDEN]: { status: 403, title: 'Forbidden' },
  [ErrorCode.NOT_OWNER]: { status: 401, title: 'Not the owner of this task' },
  [ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE]: { status: 503, title: 'Identity provider unavailable' },
  [ErrorCode.TASK_NOT_FOUND]: { status: 404, title: 'Task not found' },
  [ErrorCode.SESSION_NOT_FOUND]: { status: 404, title: 'Session not found' },
  [ErrorCode.REQUEST_NOT_FOUND]: { status: 404, title: 'Request not found' },
  [ErrorCode.TASK_BUSY]: { status: 409, title: 'Task is busy' },
  [ErrorCode.DELIVERY_NOT_FOUND]: { status: 404, title: 'Webhook delivery not found' },
  [ErrorCode.TOO_MANY_STREAMS]: { status: 429, title: 'Too many streams' },
  [ErrorCode.INPUT_TIMEOUT]: { status: 408, title: 'Input not received in time' },
  [ErrorCode.RATE_LIMITED]: { status: 429, title: 'Rate limit exceeded' },
  [ErrorCode.TASK_NOT_PAUSED]: { status: 409, title: 'Task is not paused' },
  [ErrorCode.TASK_PAUSED]: { status: 409, title: 'Task is paused' },
  [ErrorCode.REQUEST_SUPERSEDED]: { status: 409, title: 'Request superseded' },
  [ErrorCode.TASK_NOT_RUNNING]: { status: 409, title: 'Nothing to cancel' },
  [ErrorCode.APPROVAL_ALREADY_DECIDED]: { status: 409, title: 'Approval already decided' },
  [ErrorCode.APPROVAL_EXPIRED]: { status: 409, title: 'Approval expired' },
  [ErrorCode.NOT_A_CLIENT_TOOL_CALL]: { status: 409, title: 'Not a client-side tool call' },
  [ErrorCode.ABANDONED]: { status: 503, title: 'Request abandoned' },
  [ErrorCode.LEASE_LOST]: { status: 409, title: 'Request taken over' },
  [ErrorCode.VERSION_CONFLICT]: { status: 409, title: 'Concurrent modification' },
  [ErrorCode.STATE_STORE_UNAVAILABLE]: { status: 503, title: 'State store unavailable' },
  [ErrorCode.SHUTTING_DOWN]: { status: 503, title: 'Server shutting down' },
  [ErrorCode.STATE_CORRUPT]: { status: 500, title: 'Stored state cannot be read' },
  [ErrorCode.ARCHIVE_UNAVAILABLE]: { status: 503, title: 'Audit archive unavailable' },
  [ErrorCode.LLM_RATE_LIMITED]: { status: 429, title: 'Model provider rate limit' },
  [ErrorCode.LLM_TIMEOUT]: { status: 504, title: 'Model provider timed out' },
  [ErrorCode.LLM_UNAVAILABLE]: { status: 502, title: 'Model provider unavailable' },
  [ErrorCode.LLM_REQUEST_REJECTED]: { status: 502, title: 'Model provider rejected the request' },
  [ErrorCode.LLM_CONTENT_FILTERED]: { status: 502, title: 'Model output was filtered' },
  [ErrorCode.LLM_OUTPUT_INVALID]: { status: 502, title: 'Model output does not match the output type' },
  [ErrorCode.TOOL_ROUNDS_EXCEEDED]: { status: 500, title: 'Too many tool rounds' },
  [ErrorCode.REQUEST_CANCELED]: { status: 409, title: 'Request canceled' },
  [ErrorCode.INTERNAL]: { status: 500, title: 'Internal server error' },
} as const satisfies Record<ErrorCode, StatusEntry>;

export function statusOf(code: ErrorCode): StatusEntry {
  return ERROR_STATUS[code];
}
