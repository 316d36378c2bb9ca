import { createHmac, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { base64url, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK, SignJWT } from 'jose';

/**
 * A real, local OpenID Connect issuer shaped like Entra ID, for the auth tests:
 * - `GET /{tenant}/v2.0/.well-known/openid-configuration` (tenant id, `organizations` or `common`)
 * - `GET /{tenant}/discovery/v2.0/keys` (the JWKS, entries shaped like Entra's: kid, x5t, n, e, no alg)
 * - RS256 signing keys with a `kid`, rotation (publish a new key, sign with it, optionally retire the old)
 * - tokens shaped like Entra's v1.0 and v2.0 access tokens, delegated (scp) and app-only (roles)
 * - modes that make it unreachable: `down` resets every connection, `hang` never answers, `error` is a 500.
 * Every request is counted by kind, so tests can assert "one refetch, not ten".
 */

export type IssuerMode = 'up' | 'down' | 'hang' | 'error';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  publicPem: string;
}

export interface MintOptions {
  /** `v2` (default): iss `{origin}/{tid}/v2.0`, azp; `v1`: iss `https://sts.windows.net/{tid}/`, appid, upn. */
  version?: 'v1' | 'v2';
  /** `delegated` (default): scp and a user; `app`: roles, idtyp app, oid = sub = the service principal. */
  kind?: 'delegated' | 'app';
  tid?: string;
  oid?: string;
  aud?: string;
  /** Space-separated, delegated tokens only (default `agents.invoke`). */
  scp?: string;
  /** App-only tokens only (default `['Agents.Invoke']`). */
  roles?: string[];
  /** Overrides the issuer the version implies. */
  iss?: string;
  /** Seconds from now; default 3600. */
  expiresIn?: number;
  /** Seconds from now (negative: in the past); default -60 (as Entra: nbf a little before iat). */
  notBefore?: number;
  /** Sign with this key instead of the current one (its kid goes in the header). */
  key?: SigningKey;
  /** Put this kid in the header whatever key signs. */
  kid?: string;
  /** Extra or replacement claims; `undefined` removes a claim. */
  claims?: Record<string, unknown>;
}

export interface OidcIssuer {
  /** `http://127.0.0.1:PORT`: TA_ENTRA_AUTHORITY. */
  origin: string;
  /** The key tokens are signed with now. */
  current: SigningKey;
  /** Keys published in the JWKS. */
  published: () => SigningKey[];
  counts: { metadata: number; jwks: number; other: number };
  /** Every path requested, in order. */
  paths: string[];
  v2Issuer: (tid: string) => string;
  mint: (options?: MintOptions) => Promise<string>;
  /** A fresh key pair that is NOT published (an attacker's, or one from another issuer). */
  foreignKey: (kid?: string) => Promise<SigningKey>;
  /** Publishes a new key and signs with it from now on; `retireOld` removes the previous ones. */
  rotate: (options?: { retireOld?: boolean }) => Promise<SigningKey>;
  setMode: (mode: IssuerMode) => void;
  close: () => Promise<void>;
}

/** Made-up ids: no real tenant is involved anywhere in the tests. */
export const DEFAULT_TENANT = 'c0ffee00-0000-4000-8000-00000000000a';
export const DEFAULT_AUDIENCE = 'api://teal-agent-server';

/**
 * The env that points the server's Entra auth at `authority` (an issuer, or a bare URL where none
 * need answer): a single-tenant app (TA_ENTRA_TENANT_ID = DEFAULT_TENANT) for DEFAULT_AUDIENCE that
 * requires the scope `agents.invoke`, so what `mint()` makes by default passes. `vars` adds or
 * replaces variables, `undefined` removes one (as `MintOptions.claims`). Giving
 * TA_ENTRA_ALLOWED_TENANTS makes it a multi-tenant app: the default tenant id is then left out,
 * since with one the server reads metadata from that tenant instead of `organizations`.
 */
export function entraEnv(authority: Pick<OidcIssuer, 'origin'> | string, vars: Record<string, string | undefined> = {}): Record<string, string> {
  const tenancy = 'TA_ENTRA_ALLOWED_TENANTS' in vars ? {} : { TA_ENTRA_TENANT_ID: DEFAULT_TENANT };
  const env: Record<string, string | undefined> = {
    TA_AUTH_MODE: 'entra',
    TA_ENTRA_AUTHORITY: typeof authority === 'string' ? authority : authority.origin,
    ...tenancy,
    TA_ENTRA_AUDIENCE: DEFAULT_AUDIENCE,
    TA_ENTRA_REQUIRED_SCOPES: 'agents.invoke',
    ...vars,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export async function newSigningKey(kid = `key-${randomUUID().slice(0, 8)}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { kid, privateKey, publicJwk: { ...jwk, kid }, publicPem: await exportSPKI(publicKey) };
}

export async function startOidcIssuer(): Promise<OidcIssuer> {
  let keys: SigningKey[] = [await newSigningKey()];
  let mode: IssuerMode = 'up';
  const counts = { metadata: 0, jwks: 0, other: 0 };
  const paths: string[] = [];
  const sockets = new Set<Socket>();
  const hung = new Set<ServerResponse>();

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    paths.push(path);
    const meta = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(path);
    const jwks = /^\/([^/]+)\/discovery\/v2\.0\/keys$/.exec(path);
    if (meta) counts.metadata++;
    else if (jwks) counts.jwks++;
    else counts.other++;

    if (mode === 'down') return void req.socket.destroy();
    if (mode === 'hang') return void hung.add(res);
    if (mode === 'error') return json(res, 500, { error: 'server_error' });
    if (meta) return json(res, 200, discovery(origin, meta[1]!));
    if (jwks) return json(res, 200, { keys: keys.map(entraJwk(origin)) });
    json(res, 404, { error: 'not_found' });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const issuer: OidcIssuer = {
    origin,
    get current() {
      return keys[keys.length - 1]!;
    },
    published: () => [...keys],
    counts,
    paths,
    v2Issuer: (tid) => `${origin}/${tid}/v2.0`,
    mint: (options = {}) => mintEntraToken(origin, issuer.current, options),
    foreignKey: (kid) => newSigningKey(kid),
    async rotate({ retireOld = false } = {}) {
      const next = await newSigningKey();
      keys = retireOld ? [next] : [...keys, next];
      return next;
    },
    setMode(next) {
      mode = next;
      if (next !== 'hang') {
        for (const res of hung) res.destroy();
        hung.clear();
      }
    },
    async close() {
      for (const res of hung) res.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return issuer;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The fields Entra's v2.0 discovery document has that matter to a resource server. */
function discovery(origin: string, tenant: string) {
  const issuerTenant = tenant === 'organizations' || tenant === 'common' ? '{tenantid}' : tenant;
  return {
    issuer: `${origin}/${issuerTenant}/v2.0`,
    jwks_uri: `${origin}/${tenant}/discovery/v2.0/keys`,
    authorization_endpoint: `${origin}/${tenant}/oauth2/v2.0/authorize`,
    token_endpoint: `${origin}/${tenant}/oauth2/v2.0/token`,
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    subject_types_supported: ['pairwise'],
    tenant_region_scope: 'EU',
  };
}

/** Entra publishes RSA keys with kty, use, kid, x5t, n, e, x5c and (multi-tenant) issuer, without alg. */
function entraJwk(origin: string) {
  return (key: SigningKey) => ({
    kty: 'RSA',
    use: 'sig',
    kid: key.kid,
    x5t: key.kid,
    n: key.publicJwk.n,
    e: key.publicJwk.e,
    issuer: `${origin}/{tenantid}/v2.0`,
  });
}

const uuid = () => randomUUID();

/**
 * An access token with the claims Entra ID puts in them (learn.microsoft.com, "Access token claims
 * reference"), signed by `current` for the authority `origin`. Usable without a running issuer.
 */
export async function mintEntraToken(origin: string, current: SigningKey, o: MintOptions): Promise<string> {
  const version = o.version ?? 'v2';
  const kind = o.kind ?? 'delegated';
  const tid = o.tid ?? DEFAULT_TENANT;
  const oid = o.oid ?? uuid();
  const clientApp = uuid();
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    aud: o.aud ?? DEFAULT_AUDIENCE,
    iss: o.iss ?? (version === 'v2' ? `${origin}/${tid}/v2.0` : `https://sts.windows.net/${tid}/`),
    iat: now - 60,
    nbf: now + (o.notBefore ?? -60),
    exp: now + (o.expiresIn ?? 3600),
    aio: base64url.encode(uuid()),
    oid,
    rh: '0.AXEAv4j5cvGGr0GRqy180BHbR-test.',
    sub: kind === 'app' ? oid : base64url.encode(uuid()),
    tid,
    uti: base64url.encode(uuid()).slice(0, 22),
    ver: version === 'v2' ? '2.0' : '1.0',
  };
  if (version === 'v2') Object.assign(claims, { azp: clientApp, azpacr: kind === 'app' ? '1' : '0' });
  else Object.assign(claims, { appid: clientApp, appidacr: kind === 'app' ? '1' : '0' });
  if (kind === 'delegated') {
    claims.scp = o.scp ?? 'agents.invoke';
    Object.assign(claims, { name: 'Ada Lovelace', preferred_username: 'ada@contoso.example' });
    if (version === 'v1') Object.assign(claims, { amr: ['pwd'], upn: 'ada@contoso.example', unique_name: 'ada@contoso.example' });
  } else {
    Object.assign(claims, { roles: o.roles ?? ['Agents.Invoke'], idtyp: 'app' });
  }
  for (const [k, v] of Object.entries(o.claims ?? {})) {
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  }
  const key = o.key ?? current;
  const kid = o.kid ?? key.kid;
  const header = version === 'v1' ? { alg: 'RS256', typ: 'JWT', kid, x5t: kid } : { alg: 'RS256', typ: 'JWT', kid };
  return new SignJWT(claims).setProtectedHeader(header).sign(key.privateKey);
}

/** `alg: none`: a token with no signature at all. */
export function unsignedToken(claims: Record<string, unknown>, kid = 'whatever'): string {
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v));
  return `${enc({ alg: 'none', typ: 'JWT', kid })}.${enc(claims)}.`;
}

/**
 * The classic algorithm confusion: HS256 "signed" with the issuer's PUBLIC key as the HMAC secret,
 * which a verifier that lets the token choose its algorithm would accept.
 */
export function hs256WithPublicKey(claims: Record<string, unknown>, key: SigningKey): string {
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v));
  const input = `${enc({ alg: 'HS256', typ: 'JWT', kid: key.kid })}.${enc(claims)}`;
  return `${input}.${base64url.encode(createHmac('sha256', key.publicPem).update(input).digest())}`;
}

/** The payload of a token, to rebuild a variant of it. */
export function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}
