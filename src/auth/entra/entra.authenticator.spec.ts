import type { Request } from 'express';
import { decodeJwt, importJWK, type CryptoKey } from 'jose';
import pino from 'pino';
import { Writable } from 'node:stream';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { DEFAULT_AUDIENCE, DEFAULT_TENANT, mintEntraToken, newSigningKey, SigningKey } from '../../../test/support/oidc-issuer';
import { BEARER_TOKEN } from '../principal';
import { invalidToken } from './entra-errors';
import { EntraAuthenticator } from './entra.authenticator';
import { EntraOptions } from './entra.options';
import { EntraStrategy } from './entra.strategy';
import { EntraTokenValidator } from './entra-token.validator';

const AUTHORITY = 'https://login.example.test';

function options(audience: string): EntraOptions {
  return {
    authority: AUTHORITY,
    metadataUrl: `${AUTHORITY}/${DEFAULT_TENANT}/v2.0/.well-known/openid-configuration`,
    audiences: [audience],
    allowedTenants: [DEFAULT_TENANT],
    access: { requiredScopes: ['agents.invoke'], requiredRoles: ['Agents.Invoke'] },
    clockSkewSeconds: 60,
    jwksCooldownMs: 0,
    idpTimeoutMs: 1000,
    cacheMaxAgeMs: 1000,
  };
}

function authenticator(key: SigningKey, audience: string, lines: string[]) {
  const o = options(audience);
  let imported: CryptoKey | undefined;
  const keys = {
    keyInHand: (kid: string) => (kid === key.kid ? imported : undefined),
    getKey: async (kid: string) => {
      if (kid !== key.kid) throw invalidToken('unknown kid');
      return (imported ??= (await importJWK(key.publicJwk, 'RS256')) as CryptoKey);
    },
  };
  const log = new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) });
  return new EntraAuthenticator(new EntraStrategy(new EntraTokenValidator(o, keys)), o.access, pino({ level: 'trace' }, log));
}

const request = (authorization?: string) => ({ headers: authorization ? { authorization } : {}, requestId: 'r-1' }) as unknown as Request;

/** The outcome of `call`, which may throw (a request without a token is refused synchronously) or return a promise. */
async function codeOf(call: () => unknown): Promise<string> {
  return Promise.resolve()
    .then(call)
    .then(
      () => 'ok',
      (e: DomainError) => e.code,
    );
}

describe('EntraAuthenticator (passport strategy on jose)', () => {
  let key: SigningKey;
  const lines: string[] = [];
  beforeAll(async () => {
    key = await newSigningKey('k1');
  });

  it('returns (tid, oid) and attaches the token to the request without making it enumerable', async () => {
    const token = await mintEntraToken(AUTHORITY, key, { oid: 'aaaaaaaa-0000-4000-8000-000000000001' });
    const req = request(`Bearer ${token}`);
    const principal = await authenticator(key, DEFAULT_AUDIENCE, lines).authenticate(req);
    expect(principal).toEqual({ tenantId: DEFAULT_TENANT, ownerId: 'aaaaaaaa-0000-4000-8000-000000000001' });
    expect(req[BEARER_TOKEN]).toBe(token);
    expect(Object.keys(req)).not.toContain('bearerToken');
    expect(Object.getOwnPropertyNames(req)).not.toContain('bearerToken');
    expect(JSON.stringify({ ...req, headers: {} })).not.toContain(token);
    // Until when the token is accepted (exp plus the 60 s skew): a long-lived socket refuses input after it.
    expect(req.credentialAcceptedUntilMs).toBe((decodeJwt(token).exp! + 60) * 1000);
  });

  it('passes the strategy errors through with their own codes (401, 403), not a blanket 401', async () => {
    const auth = authenticator(key, DEFAULT_AUDIENCE, lines);
    expect(await codeOf(() => auth.authenticate(request()))).toBe(ErrorCode.UNAUTHENTICATED);
    expect(await codeOf(() => auth.authenticate(request('Basic dXNlcjpwdw==')))).toBe(ErrorCode.UNAUTHENTICATED);
    const noScope = await mintEntraToken(AUTHORITY, key, { scp: 'other' });
    expect(await codeOf(() => auth.authenticate(request(`Bearer ${noScope}`)))).toBe(ErrorCode.FORBIDDEN);
  });

  it("applies an agent's override of the required scopes and roles", async () => {
    const auth = authenticator(key, DEFAULT_AUDIENCE, lines);
    const token = await mintEntraToken(AUTHORITY, key, { scp: 'special' });
    expect(await codeOf(() => auth.authenticate(request(`Bearer ${token}`)))).toBe(ErrorCode.FORBIDDEN);
    expect(await codeOf(() => auth.authenticate(request(`Bearer ${token}`), { required_scopes: ['special'] }))).toBe('ok');
  });

  it('answers a token accepted before synchronously, and refuses it synchronously (logged) where its scope is not enough', async () => {
    lines.length = 0;
    const auth = authenticator(key, DEFAULT_AUDIENCE, lines);
    const token = await mintEntraToken(AUTHORITY, key, {});
    expect(await codeOf(() => auth.authenticate(request(`Bearer ${token}`)))).toBe('ok');
    const req = request(`Bearer ${token}`);
    expect(auth.authenticate(req)).toEqual({ tenantId: DEFAULT_TENANT, ownerId: expect.any(String) });
    expect(req[BEARER_TOKEN]).toBe(token);
    expect(() => auth.authenticate(request(`Bearer ${token}`), { required_scopes: ['special'] })).toThrow(
      expect.objectContaining({ code: ErrorCode.FORBIDDEN }),
    );
    expect(lines.join('')).toContain('bearer token refused');
  });

  it('keeps two instances apart (each strategy has its own passport registry)', async () => {
    const a = authenticator(key, 'api://a', lines);
    const b = authenticator(key, 'api://b', lines);
    const forA = await mintEntraToken(AUTHORITY, key, { aud: 'api://a' });
    expect(await codeOf(() => a.authenticate(request(`Bearer ${forA}`)))).toBe('ok');
    expect(await codeOf(() => b.authenticate(request(`Bearer ${forA}`)))).toBe(ErrorCode.UNAUTHENTICATED);
  });

  it('logs refusals and acceptances without the token', async () => {
    lines.length = 0;
    const auth = authenticator(key, DEFAULT_AUDIENCE, lines);
    const good = await mintEntraToken(AUTHORITY, key, {});
    const bad = await mintEntraToken(AUTHORITY, key, { aud: 'api://nope' });
    await auth.authenticate(request(`Bearer ${good}`));
    await codeOf(() => auth.authenticate(request(`Bearer ${bad}`)));
    const all = lines.join('');
    expect(all).toContain('bearer token accepted');
    expect(all).toContain('bearer token refused');
    for (const t of [good, bad]) for (const part of t.split('.')) expect(all).not.toContain(part);
  });
});
