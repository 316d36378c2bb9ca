import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { newSigningKey, SigningKey } from '../../../test/support/oidc-issuer';
import { identityProviderUnavailable } from './entra-errors';
import { JwksCache } from './jwks-cache';

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof DomainError ? e.code : `not a DomainError: ${String(e)}`),
  );

/** A key set that can change, a fetch counter and a hand-driven clock. */
function fixture(initial: SigningKey[]) {
  const state = { keys: initial, fetches: 0, fail: false, now: 1_000_000, gate: undefined as Promise<void> | undefined };
  const load = async () => {
    state.fetches++;
    if (state.gate) await state.gate;
    if (state.fail) throw identityProviderUnavailable(new Error('down'));
    return { keys: state.keys.map((k) => ({ ...k.publicJwk, use: 'sig' })) };
  };
  const cache = new JwksCache(load, { cooldownMs: 30_000, maxAgeMs: 86_400_000, now: () => state.now });
  return { state, cache };
}

describe('JwksCache', () => {
  let a: SigningKey;
  let b: SigningKey;
  beforeAll(async () => {
    [a, b] = await Promise.all([newSigningKey('a'), newSigningKey('b')]);
  });

  it('fetches once on first use and serves known kids from the cache', async () => {
    const { state, cache } = fixture([a]);
    await cache.getKey('a');
    await cache.getKey('a');
    expect(state.fetches).toBe(1);
  });

  it('has a key in hand only once fetched, until the key set is due a refresh, and never an unknown kid', async () => {
    const { state, cache } = fixture([a]);
    expect(cache.keyInHand('a')).toBeUndefined();
    const key = await cache.getKey('a');
    expect(cache.keyInHand('a')).toBe(key);
    expect(cache.keyInHand('b')).toBeUndefined();
    state.now += 86_400_000; // maxAgeMs: the next getKey refreshes
    expect(cache.keyInHand('a')).toBeUndefined();
    expect(state.fetches).toBe(1);
  });

  it('refetches once for an unknown kid, so a rotated key works without a restart', async () => {
    const { state, cache } = fixture([a]);
    await cache.getKey('a');
    state.now += 30_000;
    state.keys = [a, b];
    await expect(cache.getKey('b')).resolves.toBeDefined();
    expect(state.fetches).toBe(2);
  });

  it('rate-limits refetches: within the cooldown an unknown kid is a 401 without any fetch', async () => {
    const { state, cache } = fixture([a]);
    await cache.getKey('a');
    state.now += 30_000;
    expect(await code(cache.getKey('nope-1'))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(state.fetches).toBe(2);
    for (let i = 0; i < 10; i++) expect(await code(cache.getKey(`nope-${i}`))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(state.fetches).toBe(2);
    state.keys = [a, b];
    expect(await code(cache.getKey('b'))).toBe(ErrorCode.UNAUTHENTICATED);
    state.now += 30_000;
    expect(await code(cache.getKey('b'))).toBe('resolved');
    expect(state.fetches).toBe(3);
  });

  it('shares one fetch among concurrent requests, first load and unknown kids alike', async () => {
    const { state, cache } = fixture([a, b]);
    let open!: () => void;
    state.gate = new Promise((r) => (open = r));
    const first = Promise.all([cache.getKey('a'), cache.getKey('b'), cache.getKey('a')]);
    open();
    await first;
    expect(state.fetches).toBe(1);
    state.gate = undefined;
    state.now += 30_000;
    const unknown = await Promise.all(['x', 'y', 'z'].map((k) => code(cache.getKey(k))));
    expect(unknown).toEqual([ErrorCode.UNAUTHENTICATED, ErrorCode.UNAUTHENTICATED, ErrorCode.UNAUTHENTICATED]);
    expect(state.fetches).toBe(2);
  });

  it('is a 503 when the key set cannot be fetched and there is nothing to fall back on', async () => {
    const { state, cache } = fixture([a]);
    state.fail = true;
    expect(await code(cache.getKey('a'))).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
    state.fail = false;
    state.now += 30_000;
    expect(await code(cache.getKey('a'))).toBe('resolved');
  });

  it('applies the cooldown from the first attempt: before any key set, failures are 503 without refetching', async () => {
    const { state, cache } = fixture([a]);
    state.fail = true;
    for (let i = 0; i < 200; i++) expect(await code(cache.getKey(`forged-${i}`))).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
    expect(state.fetches).toBe(1);
    state.fail = false;
    state.now += 29_999;
    expect(await code(cache.getKey('a'))).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
    expect(state.fetches).toBe(1);
    state.now += 1;
    expect(await code(cache.getKey('a'))).toBe('resolved');
    expect(state.fetches).toBe(2);
  });

  it('is a 503 when an unknown kid needs a refetch and the provider is down (the token may be valid)', async () => {
    const { state, cache } = fixture([a]);
    await cache.getKey('a');
    state.now += 30_000;
    state.fail = true;
    expect(await code(cache.getKey('b'))).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
    // The failed attempt counts against the cooldown: the outage is not hammered either.
    expect(await code(cache.getKey('b'))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(state.fetches).toBe(2);
  });

  it('keeps using known keys when the periodic refresh fails, and refreshes when it can', async () => {
    const { state, cache } = fixture([a]);
    await cache.getKey('a');
    state.now += 86_400_000;
    state.fail = true;
    expect(await code(cache.getKey('a'))).toBe('resolved');
    expect(state.fetches).toBe(2);
    state.fail = false;
    state.keys = [b];
    state.now += 30_000;
    expect(await code(cache.getKey('a'))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(state.fetches).toBe(3);
  });

  it('uses only RSA signing keys usable with RS256, and an unusable entry does not spoil the rest', async () => {
    const cache = new JwksCache(
      async () => ({
        keys: [
          { kty: 'EC', kid: 'ec', crv: 'P-256', x: 'x', y: 'y' },
          { ...a.publicJwk, kid: 'enc', use: 'enc' },
          { ...a.publicJwk, kid: 'ps', alg: 'PS256' },
          { kty: 'RSA', kid: 'no-modulus', e: 'AQAB' },
          { ...b.publicJwk, x5c: ['MIIC...'], issuer: 'https://login.microsoftonline.com/{tenantid}/v2.0' },
        ],
      }),
      { cooldownMs: 60_000, maxAgeMs: 86_400_000 },
    );
    expect(await code(cache.getKey('b'))).toBe('resolved');
    for (const kid of ['ec', 'enc', 'ps', 'no-modulus']) expect([kid, await code(cache.getKey(kid))]).toEqual([kid, ErrorCode.UNAUTHENTICATED]);
  });

  it('is a 503 when the provider answers something that is not a key set', async () => {
    const cache = new JwksCache(async () => ({ error: 'nope' }), { cooldownMs: 0, maxAgeMs: 1 });
    expect(await code(cache.getKey('a'))).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
  });

  describe('ready() (readiness probes)', () => {
    it('fetches the key set when none is in hand, then answers without fetching', async () => {
      const { state, cache } = fixture([a]);
      await expect(cache.ready()).resolves.toBeUndefined();
      await cache.ready();
      expect(state.fetches).toBe(1);
      expect(await code(cache.getKey('a'))).toBe('resolved'); // the probe warmed the cache for tokens
      expect(state.fetches).toBe(1);
    });

    it('fails while no key set could be fetched, retrying only after the cooldown', async () => {
      const { state, cache } = fixture([a]);
      state.fail = true;
      expect(await code(cache.ready())).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
      state.fail = false;
      state.now += 29_000;
      expect(await code(cache.ready())).toBe(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE);
      expect(state.fetches).toBe(1);
      state.now += 1_000;
      expect(await code(cache.ready())).toBe('resolved');
      expect(state.fetches).toBe(2);
    });

    it('stays up when a refresh fails: the keys in hand still validate tokens', async () => {
      const { state, cache } = fixture([a]);
      await cache.ready();
      state.fail = true;
      state.now += 86_400_000;
      await cache.getKey('a');
      expect(await code(cache.ready())).toBe('resolved');
    });
  });
});
