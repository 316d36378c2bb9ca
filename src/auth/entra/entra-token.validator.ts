import type { MaybeAsync } from '../../common/concurrency/maybe-async';
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from 'jose';
import { GUID } from '../../common/validation/guid';
import { invalidToken, withRefusedTenant } from './entra-errors';
import type { EntraIdentity } from './entra-identity';
import { expectedIssuers } from './entra-issuers';
import type { EntraOptions } from './entra.options';
import type { SigningKeySource } from './jwks-cache';
import { tokenDigest, ValidatedToken, ValidatedTokenCache } from './validated-token.cache';

const REQUIRED_CLAIMS = ['exp', 'iss', 'aud', 'tid', 'oid'] as const;

/**
 * Validates an Entra ID access token (v1.0 or v2.0) with jose: RS256 only, signature against the
 * identity provider's keys, `aud` among the configured audiences, `exp`/`nbf` within the clock
 * skew, `iss` naming the token's own `tid`, and `tid` in the allowed tenants. Every refusal is a
 * 401 with a fixed reason; an unreachable identity provider surfaces as 503 from the key source.
 * Authorization (scopes and roles) is a separate step (access-check.ts), so that a valid token
 * without the right scope is a 403, not a 401.
 *
 * A token that passed is remembered (ValidatedTokenCache) until it would expire, and answered from
 * there while the key that verified it is still the provider's: the same token, the same
 * configuration and the same key would pass every check again, so only the signature check's cost
 * is saved, never a check.
 */
export class EntraTokenValidator {
  private readonly allowedTenants: Set<string>;
  private readonly cache: ValidatedTokenCache;
  private readonly now: () => number;

  constructor(
    private readonly options: EntraOptions,
    private readonly keys: SigningKeySource,
    deps: { cache?: ValidatedTokenCache; now?: () => number } = {},
  ) {
    this.allowedTenants = new Set(options.allowedTenants.map((t) => t.toLowerCase()));
    this.cache = deps.cache ?? new ValidatedTokenCache();
    this.now = deps.now ?? Date.now;
  }

  /**
   * The token's identity. A token answered from the cache while its key is in hand (the common
   * case: a client's next request) is answered synchronously, without a promise; anything else
   * (a first use, a key refresh due) is a promise. `digest`: the token's, when the caller has it
   * (bearer-token.ts remembers it per connection).
   */
  validate(token: string, digest = tokenDigest(token)): MaybeAsync<EntraIdentity> {
    const now = this.now();
    const cached = this.cache.get(digest, now);
    if (cached && this.keys.keyInHand(cached.kid) === cached.key) return cached.identity;
    return this.validateAfresh(token, digest, now, cached);
  }

  private async validateAfresh(token: string, digest: string, now: number, cached: ValidatedToken | undefined): Promise<EntraIdentity> {
    if (cached) {
      // The key lookup also runs the key set's periodic refresh; a refreshed or retired key is a
      // different object or a refusal, and the token is then verified (or refused) afresh.
      const key = await this.keys.getKey(cached.kid).catch((err: unknown) => {
        this.cache.delete(digest);
        throw err;
      });
      if (key === cached.key) return cached.identity;
    }
    const validated = await this.verify(token, now);
    this.cache.set(digest, validated);
    return validated.identity;
  }

  private async verify(token: string, now: number): Promise<ValidatedToken> {
    // The header is checked before any key lookup, so malformed or alg-confused tokens never
    // cause traffic to the identity provider.
    const header = decodeHeader(token);
    if (header.alg !== 'RS256') throw invalidToken('only RS256-signed tokens are accepted');
    if (typeof header.kid !== 'string' || !header.kid) throw invalidToken('the token header has no kid');
    const key = await this.keys.getKey(header.kid);

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: ['RS256'],
        audience: this.options.audiences,
        clockTolerance: this.options.clockSkewSeconds,
        currentDate: new Date(now),
        requiredClaims: [...REQUIRED_CLAIMS],
      }));
    } catch (err) {
      if (err instanceof errors.JOSEError) throw invalidToken(reasonFor(err));
      throw err;
    }
    const identity = this.identityOf(payload);
    return { identity, kid: header.kid, key, acceptedUntilMs: identity.acceptedUntilMs };
  }

  /** The checks after the signature, on claims Entra ID signed. */
  private identityOf(payload: JWTPayload): EntraIdentity {
    const tid = guidClaim(payload, 'tid');
    // Signed by Entra ID for this tenant: a refusal from here on is recorded with the tenant (audit).
    try {
      const oid = guidClaim(payload, 'oid');
      if (!expectedIssuers(this.options.authority, tid).includes(String(payload.iss))) {
        throw invalidToken("the issuer (iss) is not Entra ID for the token's tenant (tid)");
      }
      if (!this.allowedTenants.has(tid)) throw invalidToken('the tenant (tid) is not allowed to call this API');

      const scp = payload.scp;
      const kind = tokenKind(payload, oid);
      const roles = Array.isArray(payload.roles) ? payload.roles.filter((r): r is string => typeof r === 'string') : [];
      // Frozen: one identity answers every request that sends this token (ValidatedTokenCache).
      return deepFrozen({
        tenantId: tid,
        objectId: oid,
        tokenVersion: payload.ver === '1.0' ? '1.0' : '2.0',
        kind,
        scopes: typeof scp === 'string' ? scp.split(' ').filter(Boolean) : [],
        roles,
        clientAppId: stringClaim(payload.azp) ?? stringClaim(payload.appid),
        // jose refuses from exp + tolerance on (exp is a required, numeric claim here).
        acceptedUntilMs: (payload.exp! + this.options.clockSkewSeconds) * 1000,
      });
    } catch (err) {
      throw withRefusedTenant(err, tid);
    }
  }
}

/**
 * `delegated` when the token carries `scp` (and does not say `idtyp: app`); `app` only when it says
 * so (`idtyp: app`) or, without `idtyp`, its subject is its own object (`sub` = `oid`, the client
 * credentials shape). Anything else (a user's token with roles and no `scp`) is refused: it is
 * neither, and roles must never let a user pass as an app.
 */
function tokenKind(payload: JWTPayload, oid: string): 'delegated' | 'app' {
  const idtyp = payload.idtyp;
  if (typeof payload.scp === 'string') {
    if (idtyp === 'app') throw invalidToken('the token says it is app-only (idtyp) but carries scopes (scp)');
    return 'delegated';
  }
  if (idtyp === 'app') return 'app';
  if (idtyp === undefined && typeof payload.sub === 'string' && payload.sub.toLowerCase() === oid) return 'app';
  throw invalidToken('the token is neither delegated (no scp) nor app-only (idtyp is not app, or sub is not oid)');
}

function decodeHeader(token: string) {
  try {
    return decodeProtectedHeader(token);
  } catch {
    throw invalidToken('the token is not a well-formed JWT');
  }
}

function guidClaim(payload: JWTPayload, name: 'tid' | 'oid'): string {
  const value = payload[name];
  if (typeof value !== 'string' || !GUID.test(value)) throw invalidToken(`the ${name} claim is not an Entra ID GUID`);
  return value.toLowerCase();
}

function deepFrozen(identity: EntraIdentity): EntraIdentity {
  Object.freeze(identity.scopes);
  Object.freeze(identity.roles);
  return Object.freeze(identity);
}

const stringClaim = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** jose's messages are safe but vary by version; clients get stable phrases instead. */
function reasonFor(err: InstanceType<typeof errors.JOSEError>): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'the token is not valid yet (nbf)';
    if (err.claim === 'aud') return 'the token is not meant for this API (aud)';
    const known = (REQUIRED_CLAIMS as readonly string[]).includes(err.claim) ? err.claim : 'a required';
    return `the ${known} claim is missing or invalid`;
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the signature is not valid';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'only RS256-signed tokens are accepted';
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return 'the token is not a well-formed JWT';
  return 'the token could not be verified';
}
