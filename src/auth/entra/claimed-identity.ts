import { DomainError } from '../../common/errors/domain-error';
import { GUID } from '../../common/validation/guid';

/**
 * The caller a refused token claims to be, for its `auth.failed` audit record, as sign-in logs
 * record the user an attempt names: an operator sees which tenant and user an attack aimed at.
 * Unverified by definition (the names say so): the token was refused, so its payload is only what
 * the sender wrote. Read without trusting it: only an Entra GUID becomes a field, so no other text
 * of the token (and no part of the token itself) reaches a log line.
 */
export interface ClaimedIdentity {
  claimed_tid?: string;
  claimed_oid?: string;
}

/**
 * The longest payload segment decoded: Node's default limit for a request's whole header section
 * (16 KiB), so any token that can arrive is read, and a server that raises that limit does not
 * make a refusal decode more.
 */
export const MAX_CLAIMED_PAYLOAD_CHARS = 16 * 1024;

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** `tid` and `oid` of a compact JWS's payload, each when it is a GUID; nothing from any other shape. */
export function readClaimedIdentity(token: string): ClaimedIdentity {
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (first < 1 || second < 0 || token.indexOf('.', second + 1) >= 0) return {};
  const segment = token.slice(first + 1, second);
  if (segment.length > MAX_CLAIMED_PAYLOAD_CHARS || !BASE64URL.test(segment)) return {};
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return {};
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return {};
  const claims = payload as Record<string, unknown>;
  const out: ClaimedIdentity = {};
  if (isGuid(claims.tid)) out.claimed_tid = claims.tid.toLowerCase();
  if (isGuid(claims.oid)) out.claimed_oid = claims.oid.toLowerCase();
  return out;
}

const isGuid = (v: unknown): v is string => typeof v === 'string' && GUID.test(v);

const CLAIMED = new WeakMap<object, ClaimedIdentity>();

/** Notes on a refusal (401/403) who its token claims to be, read only now that it is refused. Returns `err`. */
export function withClaimedIdentity(err: unknown, token: string): unknown {
  if (err instanceof DomainError && !CLAIMED.has(err)) CLAIMED.set(err, readClaimedIdentity(token));
  return err;
}

/** The claims noted on a refusal; none for any other error. */
export function claimedIdentityOf(err: unknown): ClaimedIdentity {
  return (err instanceof DomainError && CLAIMED.get(err)) || {};
}
