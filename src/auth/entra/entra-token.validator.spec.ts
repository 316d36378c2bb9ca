import { decodeJwt, importJWK } from 'jose';
import { DomainError } from '../../common/errors/domain-error';
import {
  claimsOf,
  DEFAULT_AUDIENCE,
  DEFAULT_TENANT,
  hs256WithPublicKey,
  MintOptions,
  mintEntraToken,
  newSigningKey,
  SigningKey,
  unsignedToken,
} from '../../../test/support/oidc-issuer';
import { invalidToken } from './entra-errors';
import { EntraOptions, KEY_CACHE_MAX_AGE_MS } from './entra.options';
import { EntraTokenValidator } from './entra-token.validator';
import type { SigningKeySource } from './jwks-cache';

const AUTHORITY = 'https://login.example.test';
const CLIENT_ID = '0e9a1d4c-5b1f-4b8e-9a57-3f3c2b9e8d11';
const OTHER_TENANT = 'c0ffee00-0000-4000-8000-00000000000b';

const options: EntraOptions = {
  authority: AUTHORITY,
  metadataUrl: `${AUTHORITY}/${DEFAULT_TENANT}/v2.0/.well-known/openid-configuration`,
  audiences: [DEFAULT_AUDIENCE, CLIENT_ID],
  allowedTenants: [DEFAULT_TENANT.toUpperCase(), OTHER_TENANT],
  access: { requiredScopes: ['agents.invoke'], requiredRoles: ['Agents.Invoke'] },
  clockSkewSeconds: 60,
  jwksCooldownMs: 0,
  idpTimeoutMs: 1000,
  cacheMaxAgeMs: KEY_CACHE_MAX_AGE_MS,
};

/** A key source holding exactly the given keys (the JWKS cache is specified on its own). */
const keysOf = (...keys: SigningKey[]): SigningKeySource => ({
  keyInHand: () => undefined,
  getKey: async (kid) => {
    const key = keys.find((k) => k.kid === kid);
    if (!key) throw invalidToken('unknown kid');
    return (await importJWK(key.publicJwk, 'RS256')) as never;
  },
});

async function refusal(p: unknown): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof DomainError)) throw e;
    return `${e.code}: ${e.message}`;
  }
  return 'accepted';
}

describe('EntraTokenValidator', () => {
  let key: SigningKey;
  let validator: EntraTokenValidator;
  const mint = (o: MintOptions = {}) => mintEntraToken(AUTHORITY, key, o);

  beforeAll(async () => {
    key = await newSigningKey('k1');
    validator = new EntraTokenValidator(options, keysOf(key));
  });

  it('accepts a v2.0 delegated token and reports tid, oid, scopes', async () => {
    const oid = 'AAAAAAAA-1111-4111-8111-111111111111';
    const token = await mint({ oid, scp: 'agents.read agents.invoke' });
    const identity = await validator.validate(token);
    expect(identity).toEqual({
      tenantId: DEFAULT_TENANT,
      objectId: oid.toLowerCase(),
      tokenVersion: '2.0',
      kind: 'delegated',
      scopes: ['agents.read', 'agents.invoke'],
      roles: [],
      clientAppId: expect.any(String),
      // exp plus the clock skew: the moment from which the same token is refused.
      acceptedUntilMs: (decodeJwt(token).exp! + options.clockSkewSeconds) * 1000,
    });
  });

  it('accepts a v1.0 token (iss https://sts.windows.net/{tid}/) with the client id as audience', async () => {
    const identity = await validator.validate(await mint({ version: 'v1', aud: CLIENT_ID }));
    expect(identity).toMatchObject({ tenantId: DEFAULT_TENANT, tokenVersion: '1.0', kind: 'delegated' });
  });

  it('accepts an app-only token: kind app, the service principal oid, roles', async () => {
    const oid = 'bbbbbbbb-2222-4222-8222-222222222222';
    const identity = await validator.validate(await mint({ kind: 'app', oid, roles: ['Agents.Invoke'] }));
    expect(identity).toMatchObject({ objectId: oid, kind: 'app', roles: ['Agents.Invoke'], scopes: [] });
  });

  it('accepts an app-only token without idtyp when sub equals oid (v1 client credentials)', async () => {
    const oid = 'bbbbbbbb-2222-4222-8222-222222222222';
    const token = await mint({ kind: 'app', version: 'v1', oid, claims: { idtyp: undefined } });
    expect(await validator.validate(token)).toMatchObject({ objectId: oid, kind: 'app' });
  });

  it.each<[string, Record<string, unknown>]>([
    ['idtyp user, roles and no scp', { idtyp: 'user', roles: ['Agents.Invoke'], scp: undefined }],
    ['no idtyp, no scp and sub other than oid', { roles: ['Agents.Invoke'], scp: undefined }],
    ['idtyp app with scp', { idtyp: 'app' }],
  ])('refuses a token that is neither delegated nor app-only (%s) with 401', async (_name, claims) => {
    const result = await refusal(validator.validate(await mint({ claims })));
    expect(result).toMatch(/^UNAUTHENTICATED: Invalid bearer token: /);
    expect(result).toMatch(/idtyp/);
  });

  it('accepts a token of any allowed tenant, each with its own issuer', async () => {
    expect(await validator.validate(await mint({ tid: OTHER_TENANT }))).toMatchObject({ tenantId: OTHER_TENANT });
  });

  it.each<[string, MintOptions | (() => Promise<string> | string), RegExp]>([
    ['expired beyond the skew', { expiresIn: -61 - 5 }, /expired/],
    ['not valid yet beyond the skew', { notBefore: 120 }, /not valid yet/],
    ['another audience', { aud: 'api://someone-else' }, /aud/],
    ['an issuer that is not Entra ID', { iss: 'https://evil.example/' }, /issuer/],
    ['the issuer of another tenant than tid', { iss: `${AUTHORITY}/${OTHER_TENANT}/v2.0` }, /issuer/],
    ['a v1 issuer of another tenant than tid', { iss: `https://sts.windows.net/${OTHER_TENANT}/` }, /issuer/],
    ['a tenant that is not allowed', { tid: 'c0ffee00-0000-4000-8000-00000000000c' }, /tenant/],
    ['a tid that is not a GUID', { tid: 'contoso.onmicrosoft.com', iss: `${AUTHORITY}/contoso.onmicrosoft.com/v2.0` }, /tid/],
    ['no oid', { claims: { oid: undefined } }, /oid/],
    ['no exp', { claims: { exp: undefined } }, /exp/],
    ['an unknown kid', { kid: 'k2' }, /unknown kid/],
  ])('refuses %s with 401', async (_name, variant, reason) => {
    const token = typeof variant === 'function' ? await variant() : await mint(variant);
    const result = await refusal(validator.validate(token));
    expect(result).toMatch(/^UNAUTHENTICATED: Invalid bearer token: /);
    expect(result).toMatch(reason);
  });

  it('tolerates exp and nbf within the configured clock skew', async () => {
    expect(await validator.validate(await mint({ expiresIn: -30 }))).toBeDefined();
    expect(await validator.validate(await mint({ notBefore: 30 }))).toBeDefined();
  });

  it('refuses a signature made by another key under a known kid', async () => {
    const forged = await mintEntraToken(AUTHORITY, { ...(await newSigningKey('k1')) }, {});
    expect(await refusal(validator.validate(forged))).toMatch(/signature is not valid/);
  });

  it('refuses alg none and HS256 keyed with the public key before looking up any key', async () => {
    let lookups = 0;
    const counting = new EntraTokenValidator(options, { keyInHand: () => undefined, getKey: async () => (lookups++, Promise.reject(new Error('no'))) });
    const claims = claimsOf(await mint());
    expect(await refusal(counting.validate(unsignedToken(claims, 'k1')))).toMatch(/only RS256/);
    expect(await refusal(counting.validate(hs256WithPublicKey(claims, key)))).toMatch(/only RS256/);
    expect(await refusal(counting.validate('not.a.jwt'))).toMatch(/well-formed/);
    expect(await refusal(counting.validate('garbage'))).toMatch(/well-formed/);
    expect(lookups).toBe(0);
  });

  it('refuses a token with no kid', async () => {
    const [h, p, s] = (await mint()).split('.');
    const header = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(h!, 'base64url').toString()), kid: undefined }));
    expect(await refusal(validator.validate(`${header.toString('base64url')}.${p}.${s}`))).toMatch(/no kid/);
  });

  it('never puts token material in the message or the challenge', async () => {
    const token = await mint({ aud: 'api://someone-else' });
    try {
      await validator.validate(token);
      throw new Error('accepted');
    } catch (e) {
      const err = e as DomainError;
      const said = `${err.message} ${JSON.stringify(err.headers)}`;
      for (const part of token.split('.')) expect(said).not.toContain(part.slice(0, 16));
      expect(err.headers?.['WWW-Authenticate']).toMatch(/^Bearer error="invalid_token", error_description="[^"]+"$/);
    }
  });
});
