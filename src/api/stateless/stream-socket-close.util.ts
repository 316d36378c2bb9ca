/** The RFC 6455 §7.4 close codes the `/stream` socket ends with. */
export const CloseCode = {
  /** The answer was sent whole. */
  NORMAL: 1000,
  /** The server is shutting down. */
  GOING_AWAY: 1001,
  /** The input message is not JSON, or a field fails validation (the reason names it). */
  INVALID_PAYLOAD: 1007,
  /** No input within TA_WS_FIRST_MESSAGE_MS, or input after the caller's token expired. */
  POLICY_VIOLATION: 1008,
  /** The input message is larger than TA_MAX_BODY_BYTES (sent by `ws` itself). */
  MESSAGE_TOO_BIG: 1009,
  /** The model provider or the server failed; the reason carries the error code. */
  INTERNAL_ERROR: 1011,
  /** A rate limit, too many open sockets of the caller, or an unavailable dependency: worth retrying later (IANA registry). */
  TRY_AGAIN_LATER: 1013,
} as const;

/**
 * The close code for an error that ended the stream, from the HTTP status the same error has on
 * `POST /sse`: input errors are the client's (1007), input too late or on an expired token breaks
 * the route's policy (1008), transient outages say "try again" (1013), anything else is the
 * server's (1011).
 */
export function closeCodeFor(status: number): number {
  if (status === 400 || status === 415 || status === 422) return CloseCode.INVALID_PAYLOAD;
  if (status === 401 || status === 408) return CloseCode.POLICY_VIOLATION;
  if (status === 413) return CloseCode.MESSAGE_TOO_BIG;
  if (status === 429 || status === 503) return CloseCode.TRY_AGAIN_LATER;
  return CloseCode.INTERNAL_ERROR;
}

/** A close frame's reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5: 125 minus the code). */
const MAX_REASON_BYTES = 123;

/** `text` cut to fit a close frame, on a character boundary, with `…` when cut. */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_REASON_BYTES) return text;
  const budget = MAX_REASON_BYTES - Buffer.byteLength('…');
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > budget) break;
    out += ch;
    bytes += size;
  }
  return `${out}…`;
}
