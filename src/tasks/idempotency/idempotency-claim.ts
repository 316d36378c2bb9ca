import { createHash } from 'node:crypto';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { IdempotencyEntry } from '../../state/state.entities';

/** The longest `Idempotency-Key` taken (the bound; the IETF draft leaves it to the server). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** What a POST with an `Idempotency-Key` claims: where the key is stored and what it must match. */
export interface IdempotencyClaim {
  tenantId: string;
  /** The entry's key (IdempotencyEntry.key): a digest of owner, agent and the client's key. */
  key: string;
  /** A digest of the operation, the path, the query and the body. */
  fingerprint: string;
  operation: IdempotencyEntry['operation'];
}

/** Where the POST came from: enough to scope and fingerprint it. */
export interface ClaimSource {
  tenantId: string;
  ownerId: string;
  /** The agent's `name:version` (keys are per tenant, owner and agent). */
  agent: string;
  operation: string;
  /** The path the POST was sent to, without the query. */
  path: string;
  query?: Record<string, unknown>;
  body: unknown;
}

/**
 * The claim of a POST's `Idempotency-Key` header (undefined without one). The key is the
 * client's: any printable ASCII (an RFC 8941 string, as the IETF httpapi draft defines it), 1 to
 * 255 characters, else 400 INVALID_IDEMPOTENCY_KEY. It is stored only as a digest together with the
 * owner and the agent, so one user's key can never answer for another's request.
 */
export function claimOf(header: string | string[] | undefined, source: ClaimSource): IdempotencyClaim | undefined {
  if (header === undefined) return undefined;
  const raw = Array.isArray(header) ? header.join(',') : header;
  // A structured-field string arrives quoted ("abc"); a bare token is taken as it is.
  const value = /^".*"$/.test(raw) ? raw.slice(1, -1) : raw;
  if (!value.length || value.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(value)) {
    const message = `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`;
    throw new DomainError(ErrorCode.INVALID_IDEMPOTENCY_KEY, message, { errors: [{ field: 'Idempotency-Key', message }] });
  }
  return {
    tenantId: source.tenantId,
    key: digest([source.ownerId, source.agent, value]),
    fingerprint: digest([source.operation, source.path, canonicalJson(source.query ?? {}), canonicalJson(source.body ?? null)]),
    operation: source.operation,
  };
}

/** 422 IDEMPOTENCY_KEY_REUSED unless `entry` was stored for the same operation, path and body as `claim`. */
export function checkFingerprint(claim: IdempotencyClaim, entry: IdempotencyEntry): void {
  if (entry.fingerprint === claim.fingerprint) return;
  const message = 'This Idempotency-Key was used with another request (route or body); a key answers only for the request it was first sent with';
  throw new DomainError(ErrorCode.IDEMPOTENCY_KEY_REUSED, message, { errors: [{ field: 'Idempotency-Key', message }] });
}

/** JSON with object keys sorted at every level, so a retry whose serializer orders keys differently is the same body. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v as Record<string, unknown>)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** sha256 over the parts, each length-prefixed so no two lists of parts hash alike. */
function digest(parts: string[]): string {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(`${Buffer.byteLength(p)}:${p}`);
  return hash.digest('base64url');
}
