/**
 * Stable, machine-readable error codes. Every error a client can see carries one of these in the
 * `code` field of its problem+json body; the HTTP status for each lives in one table
 * (`error-status.ts`) so that the mapping is exhaustive and checked by the compiler.
 */
export enum ErrorCode {
  // request shape
  VALIDATION_FAILED = 'VALIDATION_FAILED',
  MALFORMED_JSON = 'MALFORMED_JSON',
  /** A paging `cursor` this API did not issue. */
  INVALID_CURSOR = 'INVALID_CURSOR',
  UNSUPPORTED_MEDIA_TYPE = 'UNSUPPORTED_MEDIA_TYPE',
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  ROUTE_NOT_FOUND = 'ROUTE_NOT_FOUND',
  METHOD_NOT_ALLOWED = 'METHOD_NOT_ALLOWED',
  /** A CORS preflight from an origin TA_CORS_ORIGINS does not list. */
  CORS_ORIGIN_NOT_ALLOWED = 'CORS_ORIGIN_NOT_ALLOWED',
  /** An `Idempotency-Key` header that is empty, longer than 255 characters or not printable ASCII. */
  INVALID_IDEMPOTENCY_KEY = 'INVALID_IDEMPOTENCY_KEY',
  /** An `Idempotency-Key` already used with another route or body (its first use is what it answers for). */
  IDEMPOTENCY_KEY_REUSED = 'IDEMPOTENCY_KEY_REUSED',
  // identity
  UNAUTHENTICATED = 'UNAUTHENTICATED',
  FORBIDDEN = 'FORBIDDEN',
  NOT_OWNER = 'NOT_OWNER',
  IDENTITY_PROVIDER_UNAVAILABLE = 'IDENTITY_PROVIDER_UNAVAILABLE',
  // state
  TASK_NOT_FOUND = 'TASK_NOT_FOUND',
  SESSION_NOT_FOUND = 'SESSION_NOT_FOUND',
  REQUEST_NOT_FOUND = 'REQUEST_NOT_FOUND',
  TASK_BUSY = 'TASK_BUSY',
  /** A webhook delivery id no task of the caller's tenant holds (GET/POST /admin/webhooks/deliveries). */
  DELIVERY_NOT_FOUND = 'DELIVERY_NOT_FOUND',
  /** Too many reconnected streams following the store at once (per caller or per replica): retry later. */
  TOO_MANY_STREAMS = 'TOO_MANY_STREAMS',
  /** A `/stream` WebSocket whose input did not come within TA_WS_FIRST_MESSAGE_MS. */
  INPUT_TIMEOUT = 'INPUT_TIMEOUT',
  /** A rate limit of `spec.limits` / `TA_RATE_LIMIT_*` (src/rate-limit): retry after `Retry-After`. */
  RATE_LIMITED = 'RATE_LIMITED',
  TASK_NOT_PAUSED = 'TASK_NOT_PAUSED',
  /** The task waits for an approval decision: decide or cancel first (edit). */
  TASK_PAUSED = 'TASK_PAUSED',
  /** The request was replaced by an edit: edit the request that replaced it. */
  REQUEST_SUPERSEDED = 'REQUEST_SUPERSEDED',
  TASK_NOT_RUNNING = 'TASK_NOT_RUNNING',
  APPROVAL_ALREADY_DECIDED = 'APPROVAL_ALREADY_DECIDED',
  APPROVAL_EXPIRED = 'APPROVAL_EXPIRED',
  /**
   * A tool result (an AG-UI `tool` message) for a pending call that is no client-side tool call:
   * a server tool's call waits for a decision (resume), never for a result standing in for it.
   */
  NOT_A_CLIENT_TOOL_CALL = 'NOT_A_CLIENT_TOOL_CALL',
  /** The process running the request stopped before it finished (its lease lapsed). */
  ABANDONED = 'ABANDONED',
  /** A running request whose lease another replica took over: its result cannot be stored. */
  LEASE_LOST = 'LEASE_LOST',
  VERSION_CONFLICT = 'VERSION_CONFLICT',
  STATE_STORE_UNAVAILABLE = 'STATE_STORE_UNAVAILABLE',
  /** The replica is shutting down: a request arriving while it drains, or one still running at the end of its grace. */
  SHUTTING_DOWN = 'SHUTTING_DOWN',
  STATE_CORRUPT = 'STATE_CORRUPT',
  /** The audit archive (TA_ARCHIVE_URL) did not answer: a deletion that would lose its audit waits for it, as do reads of the archive. */
  ARCHIVE_UNAVAILABLE = 'ARCHIVE_UNAVAILABLE',
  // model provider
  LLM_RATE_LIMITED = 'LLM_RATE_LIMITED',
  LLM_TIMEOUT = 'LLM_TIMEOUT',
  LLM_UNAVAILABLE = 'LLM_UNAVAILABLE',
  LLM_REQUEST_REJECTED = 'LLM_REQUEST_REJECTED',
  LLM_CONTENT_FILTERED = 'LLM_CONTENT_FILTERED',
  /** The model's answer does not match the agent's output_type, also after one repair attempt. */
  LLM_OUTPUT_INVALID = 'LLM_OUTPUT_INVALID',
  // agent loop
  TOOL_ROUNDS_EXCEEDED = 'TOOL_ROUNDS_EXCEEDED',
  REQUEST_CANCELED = 'REQUEST_CANCELED',
  // anything else
  INTERNAL = 'INTERNAL',
}
