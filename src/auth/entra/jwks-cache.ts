import { importJWK, type CryptoKey, type JWK } from 'jose';
import { identityProviderUnavailable, invalidToken } from './entra-errors';

/** Where a token's verification key comes from (the JWKS cache in production, a fixed set in specs). */
export interface SigningKeySource {
  /** The RS256 key with this `kid`; 401 when there is none, 503 when the key set cannot be fetched. */
  getKey(kid: string): Promise<CryptoKey>;
  /**
   * The key with this `kid` when it is in hand and nothing is due (no refresh, no fetch): what
   * `getKey` would resolve to, without I/O or a promise. Undefined otherwise: ask `getKey`.
   */
  keyInHand(kid: string): CryptoKey | undefined;
}

export interface JwksCacheOptions {
  /** Minimum time between two fetches caused by unknown `kid`s (rate limit). */
  cooldownMs: number;
  /** After this, the next token triggers a refresh (the old keys stay usable if it fails). */
  maxAgeMs: number;
  now?: () => number;
}

/**
 * The identity provider's signing keys, by `kid`.
 *
 * - Fetched on first use, kept for `maxAgeMs`, concurrent fetches shared.
 * - A token with an unknown `kid` causes one refetch, so a key rotation works without a restart;
 *   refetches are at most one per `cooldownMs`, so a flood of tokens with made-up `kid`s cannot
 *   turn this server into a load generator against the identity provider. Within the cooldown an
 *   unknown `kid` is simply invalid (401).
 * - A failed fetch is a 503 when there are no keys to fall back on, and so is every request until
 *   the cooldown since that attempt has passed (no fetch meanwhile); a failed periodic refresh
 *   keeps the keys already known (Entra announces new keys weeks before it signs with them).
 */
export class JwksCache implements SigningKeySource {
  private keys = new Map<string, CryptoKey>();
  /** When the key set in hand was fetched (undefined: never). */
  private fetchedAt?: number;
  /** When the last fetch, successful or not, started: the cooldown counts from here. */
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private inflight?: Promise<void>;
  /** Why the last fetch failed (the cause of the 503s until the next attempt). */
  private lastError?: unknown;
  private readonly now: () => number;

  constructor(
    private readonly loadJwks: () => Promise<unknown>,
    private readonly options: JwksCacheOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  keyInHand(kid: string): CryptoKey | undefined {
    if (this.fetchedAt === undefined || this.refreshDue(this.fetchedAt)) return undefined;
    return this.keys.get(kid);
  }

  async getKey(kid: string): Promise<CryptoKey> {
    if (this.fetchedAt === undefined) {
      // Nothing to fall back on: an unreachable provider is a 503 for this request. The cooldown
      // holds from the first attempt, failed ones included: until it passes, requests get 503
      // without a call to the provider (a flood of forged tokens cannot hammer it).
      if (!this.mayFetch()) throw identityProviderUnavailable(this.lastError ?? new Error('no key set fetched yet'));
      await this.refresh();
    } else if (this.refreshDue(this.fetchedAt) && this.mayFetch()) {
      await this.refresh().catch(() => undefined);
    }
    const known = this.keys.get(kid);
    if (known) return known;
    if (this.mayFetch()) {
      await this.refresh();
      const fresh = this.keys.get(kid);
      if (fresh) return fresh;
    }
    throw invalidToken("the signing key (kid) is not one of the identity provider's keys");
  }

  /**
   * Readiness: up once a key set is in hand (a failed refresh keeps it usable). Before that, a
   * fetch is tried only when the cooldown allows, so frequent probes cannot hammer the provider;
   * within it, the last failure is the answer.
   */
  async ready(): Promise<void> {
    if (this.fetchedAt !== undefined) return;
    if (!this.mayFetch()) throw identityProviderUnavailable(this.lastError ?? new Error('no key set fetched yet'));
    await this.refresh();
  }

  /** Fetches the key set now (shared with a fetch already under way). */
  refresh(): Promise<void> {
    this.inflight ??= this.load()
      .then(
        () => (this.lastError = undefined),
        (err: unknown) => {
          this.lastError = err;
          throw err;
        },
      )
      .finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  /** Whether the key set fetched at `fetchedAt` is old enough for the periodic refresh. */
  private refreshDue(fetchedAt: number): boolean {
    return this.now() - fetchedAt >= this.options.maxAgeMs;
  }

  /** A fetch under way may bring the key: waiting for it costs the provider nothing. */
  private mayFetch(): boolean {
    return this.inflight !== undefined || this.now() - this.attemptedAt >= this.options.cooldownMs;
  }

  private async load(): Promise<void> {
    this.attemptedAt = this.now();
    const doc = await this.loadJwks();
    const jwks = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(jwks)) throw identityProviderUnavailable(new Error('the JWKS document has no keys array'));
    const keys = new Map<string, CryptoKey>();
    for (const jwk of jwks as JWK[]) {
      if (!isRs256SigningKey(jwk)) continue;
      try {
        // Only the public RSA members: Entra's entries also carry x5c, x5t and issuer.
        keys.set(jwk.kid!, (await importJWK({ kty: jwk.kty, n: jwk.n, e: jwk.e }, 'RS256')) as CryptoKey);
      } catch {
        // One malformed key must not take the others down with it.
      }
    }
    this.keys = keys;
    this.fetchedAt = this.attemptedAt;
  }
}

/** RSA keys meant for signatures; Entra's JWKS entries carry no `alg`, other providers may. */
function isRs256SigningKey(jwk: JWK): boolean {
  return (
    !!jwk &&
    jwk.kty === 'RSA' &&
    typeof jwk.kid === 'string' &&
    typeof jwk.n === 'string' &&
    typeof jwk.e === 'string' &&
    (jwk.use === undefined || jwk.use === 'sig') &&
    (jwk.alg === undefined || jwk.alg === 'RS256')
  );
}
