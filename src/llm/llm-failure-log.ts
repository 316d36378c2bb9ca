import { DomainError } from '../common/errors/domain-error';

/**
 * What to log about a failed model call: our code plus the provider's status and request id (what
 * its support asks for), or for a transport failure the SDK class and the socket error code
 * (ECONNREFUSED...). Never the provider's message or headers, which can quote credentials.
 */
export function llmFailureLogFields(err: unknown): Record<string, unknown> | undefined {
  if (!(err instanceof DomainError) || !err.code.startsWith('LLM_')) return undefined;
  const cause = err.cause;
  const fields: Record<string, unknown> = { code: err.code };
  // Read by shape, not by SDK class, so that logging a failure does not load the SDK.
  const api = cause as { status?: unknown; requestID?: unknown } | undefined;
  if (cause instanceof Error && typeof api?.status === 'number') {
    fields.provider_status = api.status;
    if (typeof api.requestID === 'string' && api.requestID) fields.provider_request_id = api.requestID;
  } else if (cause instanceof Error) {
    fields.provider_error = cause.constructor.name;
    const transport = socketErrorCode(cause);
    if (transport) fields.transport_error = transport;
  }
  return fields;
}

/** The first `code` such as ECONNREFUSED down the cause chain (fetch wraps it twice). */
function socketErrorCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== 'object' || depth > 4) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
  return socketErrorCode((err as { cause?: unknown }).cause, depth + 1);
}
