import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';

/**
 * The three ways a bearer token is refused, with the RFC 6750 §3 challenge each one carries. The
 * texts are fixed phrases chosen here, never copied from the token or a library message, so no
 * token material can reach a response header or a log line through them.
 */

/**
 * No credentials of our scheme at all. RFC 6750 §3.1 would allow a bare `Bearer` challenge here; the
 * contract of this service (issue 4) is one challenge for every 401, `error="invalid_token"`, so
 * clients need to recognise only one shape.
 */
export function missingBearerToken(): DomainError {
  return new DomainError(ErrorCode.UNAUTHENTICATED, 'A bearer token is required: Authorization: Bearer <Entra ID access token>', {
    headers: { 'WWW-Authenticate': 'Bearer error="invalid_token", error_description="missing bearer token"' },
  });
}

/** Anything wrong with the token itself (shape, signature, claims, tenant). */
export function invalidToken(reason: string): DomainError {
  return new DomainError(ErrorCode.UNAUTHENTICATED, `Invalid bearer token: ${reason}`, {
    headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${headerSafe(reason)}"` },
  });
}

/** A valid token without the scope (delegated) or app role (app-only) this route requires. */
export function insufficientAccess(kind: 'scope' | 'role', required: string[]): DomainError {
  const what =
    required.length === 0
      ? `this API does not accept ${kind === 'scope' ? 'delegated (user)' : 'app-only'} tokens`
      : `the token needs one of these ${kind === 'scope' ? 'scopes (scp)' : 'app roles (roles)'}: ${required.join(', ')}`;
  const scope = kind === 'scope' && required.length ? `, scope="${headerSafe(required.join(' '))}"` : '';
  return new DomainError(ErrorCode.FORBIDDEN, `Insufficient access: ${what}`, {
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope"${scope}, error_description="${headerSafe(what)}"` },
  });
}

/** The metadata or key set could not be fetched: an outage, not the caller's fault (503, not 401). */
export function identityProviderUnavailable(cause: unknown): DomainError {
  return new DomainError(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE, 'The identity provider could not be reached to validate the token; try again shortly', {
    retryAfter: 5,
    cause,
  });
}

/** RFC 6750 §3: error_description and scope allow only %x20-21 / %x23-5B / %x5D-7E. */
function headerSafe(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');
}

const REFUSED_TENANTS = new WeakMap<object, string>();

/**
 * Notes the tenant of a token refused after its signature was verified (so the `tid` is Entra's
 * word, not the caller's), for the audit record of the refusal. Returns `err`.
 */
export function withRefusedTenant(err: unknown, tenantId: string): unknown {
  if (err instanceof DomainError && !REFUSED_TENANTS.has(err)) REFUSED_TENANTS.set(err, tenantId);
  return err;
}

/** The verified tenant of a refused token, when it got that far. */
export function refusedTenantOf(err: unknown): string | undefined {
  return err instanceof DomainError ? REFUSED_TENANTS.get(err) : undefined;
}
