/**
 * A failure a tool reports on purpose. `retryable: true` means "nothing happened, try again": the
 * executor retries it with backoff whatever the tool's idempotency. Plugins may throw any Error with
 * a `retryable` property instead of importing this class.
 */
export class ToolError extends Error {
  readonly retryable: boolean;
  constructor(message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    this.retryable = options.retryable ?? false;
  }
}

/** The per-call timeout fired. Transient: retried for idempotent tools. */
export class ToolTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms`);
    this.name = 'ToolTimeoutError';
  }
}

/**
 * How a failure may be retried:
 * - `always`: the call never reached the tool (connection refused, DNS, a 503/429 refusal, an
 *   explicit retryable ToolError), so trying again cannot repeat its effect;
 * - `if-idempotent`: it may have been done (timeout, connection reset mid-call);
 * - `never`: a definite answer (bad arguments, a 4xx, a tool-reported error).
 */
export type RetryClass = 'always' | 'if-idempotent' | 'never';

const BEFORE_SEND = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const MID_CALL = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ECONNABORTED']);

export function retryClassOf(err: unknown): RetryClass {
  if (err instanceof ToolTimeoutError) return 'if-idempotent';
  const declared = (err as { retryClass?: unknown } | null)?.retryClass;
  if (declared === 'always' || declared === 'if-idempotent' || declared === 'never') return declared;
  const explicit = (err as { retryable?: unknown } | null)?.retryable;
  if (explicit === true) return 'always';
  if (explicit === false) return 'never';
  for (const code of errorCodes(err)) {
    if (BEFORE_SEND.has(code)) return 'always';
    if (MID_CALL.has(code)) return 'if-idempotent';
  }
  return 'never';
}

/** `code`s along the `cause` chain (undici wraps the socket error in `TypeError: fetch failed`). */
function errorCodes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') out.push(e.code);
  }
  return out;
}

/** The message of an error, for an error result the model reads (no stack, no internals). */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error && err.message === 'fetch failed' ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
