import { importJWK, type CryptoKey } from 'jose';
import { DomainError } from '../../common/errors/domain-error';
import { DEFAULT_AUDIENCE, DEFAULT_TENANT, mintEntraToken, newSigningKey, SigningKey } from '../../../test/support/oidc-issuer';
import { invalidToken } from './entra-errors';
import { EntraOptions, KEY_CACHE_MAX_AGE_MS } from './entra.options';
import type { EntraIdentity } from './entra-identity';
import { EntraTokenValidator } from './entra-token.validator';
import type { SigningKeySource } from './jwks-cache';
import { ValidatedToken, ValidatedTokenCache } from './validated-token.cache';

const AUTHORITY = 'https://login.example.test';
const SKEW = 60;
const options: EntraOptions = {
  authority: AUTHORITY,
  metadataUrl: `${AUTHORITY}/${DEFAULT_TENANT}/v2.0/.well-known/openid-configuration`,
  audiences: [DEFAULT_AUDIENCE],
  allowedTenants: [DEFAULT_TENANT],
  access: { requiredScopes: ['agents.invoke'], requiredRoles: [] },
  clockSkewSeconds: SKEW,
  jwksCooldownMs: 0,
  idpTimeoutMs: 1000,
  cacheMaxAgeMs: KEY_CACHE_MAX_AGE_MS,
};

describe('ValidatedTokenCache', () => {
  const entry = (acceptedUntilMs: number) => ({ identity: {} as EntraIdentity, kid: 'k', key: {} as CryptoKey, acceptedUntilMs }) as ValidatedToken;

  it('answers a token until its acceptedUntilMs, then drops it', () => {
    const cache = new ValidatedTokenCache();
    const e = entry(1000);
    cache.set('a.b.c', e);
    expect(cache.get('a.b.c', 999)).toBe(e);
    expect(cache.get('a.b.x', 999)).toBeUndefined();
    expect(cache.get('a.b.c', 1000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('holds at most maxEntries, dropping the oldest first; 0 holds nothing', () => {
    const cache = new ValidatedTokenCache(2);
    for (const t of ['t1', 't2', 't3']) cache.set(t, entry(1000));
    expect([cache.get('t1', 0), !!cache.get('t2', 0), !!cache.get('t3', 0), cache.size]).toEqual([undefined, true, true, 2]);
    const none = new ValidatedTokenCache(0);
    none.set('t1', entry(1000));
    expect(none.get('t1', 0)).toBeUndefined();
  });
});

describe('EntraTokenValidator with its cache of validated tokens', () => {
  let key: SigningKey;
  /** The key source's current keys by kid; the same CryptoKey object until replaced (as JwksCache). */
  let published: Map<string, CryptoKey>;
  let clock: number;
  let verifySpy: jest.SpyInstance;
  /** A periodic refresh of the key set is due: nothing is in hand without asking getKey. */
  let refreshDue: boolean;
  let lookups: number;
  const keys: SigningKeySource = {
    keyInHand: (kid) => (refreshDue ? undefined : published.get(kid)),
    getKey: async (kid) => {
      lookups++;
      const k = published.get(kid);
      if (!k) throw invalidToken("the signing key (kid) is not one of the identity provider's keys");
      return k;
    },
  };
  const validator = () => new EntraTokenValidator(options, keys, { now: () => clock });
  const mint = (expiresIn = 3600) => mintEntraToken(AUTHORITY, key, { expiresIn });
  const verifications = () => verifySpy.mock.calls.length;

  beforeAll(async () => {
    key = await newSigningKey('k1');
  });
  beforeEach(async () => {
    published = new Map([[key.kid, (await importJWK(key.publicJwk, 'RS256')) as CryptoKey]]);
    clock = Date.now();
    refreshDue = false;
    lookups = 0;
    // Counts jose's RS256 signature checks (the real WebCrypto call still runs).
    verifySpy = jest.spyOn(globalThis.crypto.subtle, 'verify');
  });
  afterEach(() => verifySpy.mockRestore());

  it('verifies a token once, then answers from the cache with the same frozen identity', async () => {
    const v = validator();
    const token = await mint();
    const first = await v.validate(token);
    expect(await v.validate(token)).toBe(first);
    expect(await v.validate(token)).toBe(first);
    expect(verifications()).toBe(1);
    expect(Object.isFrozen(first) && Object.isFrozen(first.scopes)).toBe(true);
    await v.validate(await mint()); // another token: verified on its own
    expect(verifications()).toBe(2);
  });

  it('answers a token it validated before without a promise while its key is in hand, and asks the key source once a refresh is due', async () => {
    const v = validator();
    const token = await mint();
    const first = await v.validate(token);
    expect(v.validate(token)).toBe(first);
    expect(lookups).toBe(1); // the first verification's
    refreshDue = true;
    const later = v.validate(token);
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toBe(first); // the refreshed set still holds the same key: no verification
    expect([lookups, verifications()]).toEqual([2, 1]);
  });

  it('answers from the cache only until exp + the clock skew, then refuses the token as expired', async () => {
    const v = validator();
    const token = await mint(120);
    await v.validate(token);
    const exp = Math.floor(clock / 1000) + 120; // the issuer's exp (same second)
    clock = (exp + SKEW) * 1000 - 1;
    expect(await v.validate(token)).toBeDefined();
    expect(verifications()).toBe(1);
    clock = (exp + SKEW) * 1000 + 1000;
    const refused = await Promise.resolve(v.validate(token)).catch((e: DomainError) => e.message);
    expect(refused).toMatch(/expired/);
    expect(verifications()).toBe(2); // checked afresh, and refused on exp
  });

  it("answers from the cache only while the key that verified the token is still the provider's", async () => {
    const v = validator();
    const token = await mint();
    await v.validate(token);
    // The key set refreshed: the same key, a new object. The token is verified again, and passes.
    published.set(key.kid, (await importJWK(key.publicJwk, 'RS256')) as CryptoKey);
    await expect(v.validate(token)).resolves.toBeDefined();
    expect(verifications()).toBe(2);
    // The key retired: refused, as without the cache.
    published.clear();
    await expect(v.validate(token)).rejects.toThrow(/signing key \(kid\)/);
    published.set(key.kid, (await importJWK(key.publicJwk, 'RS256')) as CryptoKey);
    await expect(v.validate(token)).resolves.toBeDefined();
    expect(verifications()).toBe(3);
  });

  it('never remembers a refusal: a bad token is checked (and refused) every time', async () => {
    const v = validator();
    const forged = await mintEntraToken(AUTHORITY, await newSigningKey('k1'), {});
    for (let i = 0; i < 2; i++) await expect(v.validate(forged)).rejects.toThrow(/signature is not valid/);
    expect(verifications()).toBe(2);
  });
});
