import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import type { TaskWrite } from '../../src/state/state-store';
import type { TaskRecord } from '../../src/state/state.entities';
import { JsonResponse, request } from '../support/http';
import { claimsOf, DEFAULT_AUDIENCE, entraEnv, hs256WithPublicKey, OidcIssuer, startOidcIssuer, unsignedToken } from '../support/oidc-issuer';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';

/**
 * Entra ID bearer authentication over real HTTP: a local OpenID issuer (discovery + JWKS, RS256),
 * the real app, and one row per way a token can be wrong. Every refused request must leave the
 * store untouched (API.md §4: "Nothing is written to the store by a request that fails
 * authentication"), and no token may ever reach the logs.
 */

const AGENT = v3Agent('Assistant', { version: '0.1', description: 'Auth test agent', model: 'local/echo' });

const T1 = 'c0ffee00-0000-4000-8000-0000000000a1';
const T2 = 'c0ffee00-0000-4000-8000-0000000000a2';
const T3 = 'c0ffee00-0000-4000-8000-0000000000a3';
const CLIENT_ID = '5d1c9a6e-3f2b-4c8d-9e7a-1b2c3d4e5f60';

/** The in-memory store, counting every write attempt: "nothing new" means no commit at all. */
class CountingStore extends MemoryStateStore {
  commits = 0;
  override commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    this.commits++;
    return super.commit(tenantId, write);
  }
}

/** Two tenants, two audiences, user and app-only tokens, no key-refetch cooldown. */
const matrixEnv = (authority: OidcIssuer | string, extra: Record<string, string | undefined> = {}) =>
  entraEnv(authority, {
    TA_ENTRA_ALLOWED_TENANTS: `${T1},${T2}`,
    TA_ENTRA_AUDIENCE: `${DEFAULT_AUDIENCE},${CLIENT_ID}`,
    TA_ENTRA_REQUIRED_ROLES: 'Agents.Invoke',
    TA_ENTRA_CLOCK_SKEW_SECONDS: '60',
    TA_ENTRA_JWKS_COOLDOWN_MS: '0',
    TA_LOG_LEVEL: 'debug',
    ...extra,
  });

interface Row {
  name: string;
  /** The Authorization header, or undefined for none. */
  auth: (issuer: OidcIssuer) => Promise<string | undefined>;
  status: 200 | 401 | 403;
  /** For 401/403: what the WWW-Authenticate challenge must say. */
  challenge?: RegExp;
}

const bearer = (token: string) => `Bearer ${token}`;
const INVALID = /^Bearer error="invalid_token", error_description="[^"]+"$/;
const INSUFFICIENT = /^Bearer error="insufficient_scope"/;

const MATRIX: Row[] = [
  { name: 'no Authorization header', auth: async () => undefined, status: 401, challenge: INVALID },
  { name: 'a scheme that is not Bearer', auth: async () => 'Basic YWxpY2U6cHc=', status: 401, challenge: INVALID },
  { name: 'garbage after Bearer', auth: async () => 'Bearer garbage', status: 401, challenge: INVALID },
  { name: 'three garbage segments', auth: async () => 'Bearer aaa.bbb.ccc', status: 401, challenge: INVALID },
  {
    name: 'a bad signature (another key under the current kid)',
    auth: async (i) => bearer(await i.mint({ tid: T1, key: await i.foreignKey(i.current.kid) })),
    status: 401,
    challenge: INVALID,
  },
  {
    name: 'an unknown kid (a key the issuer never published)',
    auth: async (i) => bearer(await i.mint({ tid: T1, key: await i.foreignKey() })),
    status: 401,
    challenge: INVALID,
  },
  {
    name: 'alg none',
    auth: async (i) => bearer(unsignedToken(claimsOf(await i.mint({ tid: T1 })), i.current.kid)),
    status: 401,
    challenge: INVALID,
  },
  {
    name: 'HS256 signed with the public key',
    auth: async (i) => bearer(hs256WithPublicKey(claimsOf(await i.mint({ tid: T1 })), i.current)),
    status: 401,
    challenge: INVALID,
  },
  { name: 'expired (beyond the skew)', auth: async (i) => bearer(await i.mint({ tid: T1, expiresIn: -300 })), status: 401, challenge: INVALID },
  { name: 'not yet valid (nbf beyond the skew)', auth: async (i) => bearer(await i.mint({ tid: T1, notBefore: 300 })), status: 401, challenge: INVALID },
  { name: 'a wrong audience', auth: async (i) => bearer(await i.mint({ tid: T1, aud: 'api://another-api' })), status: 401, challenge: INVALID },
  {
    name: 'a wrong issuer',
    auth: async (i) => bearer(await i.mint({ tid: T1, iss: `https://login.evil.example/${T1}/v2.0` })),
    status: 401,
    challenge: INVALID,
  },
  {
    name: "the issuer of another tenant than the token's tid",
    auth: async (i) => bearer(await i.mint({ tid: T1, iss: i.v2Issuer(T2) })),
    status: 401,
    challenge: INVALID,
  },
  { name: 'a tenant that is not allowed', auth: async (i) => bearer(await i.mint({ tid: T3 })), status: 401, challenge: INVALID },
  {
    name: 'a delegated token without the required scope',
    auth: async (i) => bearer(await i.mint({ tid: T1, scp: 'agents.read User.Read' })),
    status: 403,
    challenge: INSUFFICIENT,
  },
  {
    name: 'an app-only token without the required role',
    auth: async (i) => bearer(await i.mint({ tid: T1, kind: 'app', roles: ['Something.Else'] })),
    status: 403,
    challenge: INSUFFICIENT,
  },
  {
    name: "a user's token with roles and no scp (idtyp user)",
    auth: async (i) => bearer(await i.mint({ tid: T1, claims: { idtyp: 'user', scp: undefined, roles: ['Agents.Invoke'] } })),
    status: 401,
    challenge: INVALID,
  },
  { name: 'a valid v1.0 token (sts.windows.net issuer, api:// audience)', auth: async (i) => bearer(await i.mint({ tid: T1, version: 'v1' })), status: 200 },
  { name: 'a valid v2.0 token (client id audience)', auth: async (i) => bearer(await i.mint({ tid: T1, aud: CLIENT_ID })), status: 200 },
  { name: 'a valid v2.0 token of the second allowed tenant', auth: async (i) => bearer(await i.mint({ tid: T2 })), status: 200 },
  { name: 'a valid app-only token with the role', auth: async (i) => bearer(await i.mint({ tid: T1, kind: 'app' })), status: 200 },
  { name: 'a token expired less than the skew ago', auth: async (i) => bearer(await i.mint({ tid: T1, expiresIn: -30 })), status: 200 },
  {
    name: 'a token signed with a rotated key (new kid published after the keys were cached)',
    auth: async (i) => {
      await i.rotate({ retireOld: true });
      return bearer(await i.mint({ tid: T1 }));
    },
    status: 200,
  },
];

describe('Entra ID bearer authentication: the matrix', () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  let store: CountingStore;
  let base: string;
  const usedTokens: string[] = [];

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    store = new CountingStore();
    t = await startTestApp({ agents: { 'a.yaml': AGENT }, env: matrixEnv(issuer), store });
    base = `${t.url}/Assistant/0.1`;
    // Warm the key cache, so that the unknown-kid and rotation rows exercise the refetch.
    const warm = await invoke(base, bearer(await issuer.mint({ tid: T1 })));
    expect(warm.status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  async function invoke(url: string, authorization: string | undefined): Promise<JsonResponse> {
    if (authorization?.startsWith('Bearer ')) usedTokens.push(authorization.slice(7));
    return request(url, {
      method: 'POST',
      body: { items: [text('hello')] },
      headers: authorization === undefined ? {} : { authorization },
    });
  }

  it.each(MATRIX.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const before = store.commits;
    const res = await invoke(base, await row.auth(issuer));
    expect({ status: res.status, code: res.body?.code }).toEqual({
      status: row.status,
      code: row.status === 200 ? undefined : row.status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN',
    });
    if (row.status === 200) {
      expect(res.body.status).toBe('Completed');
      expect(store.commits).toBeGreaterThan(before);
      return;
    }
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('www-authenticate')).toMatch(row.challenge!);
    expect(store.commits).toBe(before);
  });

  it('stamps (tid, oid) on the task and its requests: v1, v2 and app-only (the service principal)', async () => {
    const cases = [
      { tid: T1, oid: 'aaaaaaaa-1111-4111-8111-000000000001', version: 'v1' as const },
      { tid: T2, oid: 'aaaaaaaa-1111-4111-8111-000000000002', version: 'v2' as const },
      { tid: T1, oid: 'aaaaaaaa-1111-4111-8111-000000000003', version: 'v2' as const, kind: 'app' as const },
    ];
    for (const c of cases) {
      const res = await invoke(base, bearer(await issuer.mint(c)));
      expect(res.status).toBe(200);
      const task = await store.getTask(c.tid, res.body.task_id);
      expect(task).toMatchObject({ tenantId: c.tid, ownerId: c.oid });
      const requests = await store.listRequests(c.tid, res.body.task_id);
      expect(requests.map((r) => [r.tenantId, r.ownerId])).toEqual([[c.tid, c.oid]]);
      // The session is under the same owner.
      const session = await store.listSessionTasks(c.tid, c.oid, res.body.session_id, { limit: 10 });
      expect(session.items.map((x) => x.taskId)).toEqual([res.body.task_id]);
    }
  });

  it('leaves health, openapi.json and docs open without a token', async () => {
    for (const path of ['/Assistant/0.1/health', '/Assistant/0.1/health/ready', '/Assistant/0.1/openapi.json', '/Assistant/0.1/docs']) {
      const res = await request(`${t.url}${path}`);
      expect([path, res.status]).toEqual([path, 200]);
    }
  });

  it('protects the read routes too (GET task, GET session)', async () => {
    const created = await invoke(base, bearer(await issuer.mint({ tid: T1 })));
    for (const path of [`tasks/${created.body.task_id}`, `sessions/${created.body.session_id}`]) {
      const res = await request(`${base}/${path}`);
      expect([path, res.status]).toEqual([path, 401]);
    }
  });

  it('never writes a token to the log, not even at debug level', () => {
    const logs = t.rawLogs();
    expect(logs).toContain('bearer token refused');
    expect(logs).toContain('bearer token accepted');
    expect(usedTokens.length).toBeGreaterThan(MATRIX.length);
    for (const token of usedTokens) {
      for (const part of token.split('.').filter((p) => p.length > 20)) expect(logs).not.toContain(part);
    }
  });
});

describe('Entra ID keys: caching, rate-limited refetch, rotation', () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({ agents: { 'a.yaml': AGENT }, env: matrixEnv(issuer, { TA_ENTRA_JWKS_COOLDOWN_MS: '1000' }) });
    base = `${t.url}/Assistant/0.1`;
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  const call = async (token: string) => (await request(base, { body: { items: [text('x')] }, headers: { authorization: bearer(token) } })).status;

  it('fetches metadata and keys once, then serves from the cache', async () => {
    for (let i = 0; i < 5; i++) expect(await call(await issuer.mint({ tid: T1 }))).toBe(200);
    expect(issuer.counts).toMatchObject({ metadata: 1, jwks: 1 });
    // A multi-tenant app (no TA_ENTRA_TENANT_ID) reads the `organizations` metadata.
    expect(issuer.paths.slice(0, 2)).toEqual(['/organizations/v2.0/.well-known/openid-configuration', '/organizations/discovery/v2.0/keys']);
  });

  it('refetches at most once per cooldown however many unknown kids arrive, and then picks up a rotated key', async () => {
    await new Promise((r) => setTimeout(r, 1000)); // let the cooldown of the first fetch pass
    const jwksBefore = issuer.counts.jwks;
    const forged = await Promise.all(Array.from({ length: 10 }, async () => issuer.mint({ tid: T1, key: await issuer.foreignKey() })));
    const statuses = await Promise.all(forged.map(call));
    expect(statuses).toEqual(Array(10).fill(401));
    expect(issuer.counts.jwks - jwksBefore).toBe(1);

    await issuer.rotate();
    await new Promise((r) => setTimeout(r, 1000));
    expect(await call(await issuer.mint({ tid: T1 }))).toBe(200);
    expect(issuer.counts.jwks - jwksBefore).toBe(2);
  }, 30_000); // ten RSA key generations on a loaded 2-core machine can take seconds
});

describe('Entra ID single-tenant configuration', () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({ agents: { 'a.yaml': AGENT }, env: matrixEnv(issuer, { TA_ENTRA_TENANT_ID: T1, TA_ENTRA_ALLOWED_TENANTS: undefined }) });
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  it("reads the tenant's own metadata and accepts that tenant only", async () => {
    const call = async (tid: string) =>
      (await request(`${t.url}/Assistant/0.1`, { body: { items: [text('x')] }, headers: { authorization: bearer(await issuer.mint({ tid })) } })).status;
    expect(await call(T1)).toBe(200);
    expect(await call(T2)).toBe(401);
    expect(issuer.paths[0]).toBe(`/${T1}/v2.0/.well-known/openid-configuration`);
  });
});

describe('Entra ID identity provider outages are 503, not 401', () => {
  let issuer: OidcIssuer;
  afterEach(async () => issuer?.close());

  async function appOn(origin: string, store = new CountingStore(), extra: Record<string, string> = {}) {
    const t = await startTestApp({
      agents: { 'a.yaml': AGENT },
      env: matrixEnv(origin, { TA_ENTRA_IDP_TIMEOUT_MS: '300', ...extra }),
      store,
    });
    return { t, store };
  }
  const call = async (t: TestApp, token: string) =>
    request(`${t.url}/Assistant/0.1`, { body: { items: [text('x')] }, headers: { authorization: bearer(token) } });

  it.each(['down', 'hang', 'error'] as const)('issuer %s: 503 IDENTITY_PROVIDER_UNAVAILABLE, nothing stored; back up: 200', async (mode) => {
    issuer = await startOidcIssuer();
    const { t, store } = await appOn(issuer.origin);
    try {
      issuer.setMode(mode);
      const started = Date.now();
      const res = await call(t, await issuer.mint({ tid: T1 }));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 503, code: 'IDENTITY_PROVIDER_UNAVAILABLE' });
      expect(res.headers.get('www-authenticate')).toBeNull();
      expect(res.headers.get('retry-after')).toBe('5');
      expect(Date.now() - started).toBeLessThan(3000);
      expect(store.commits).toBe(0);
      expect(t.rawLogs()).toContain('identity provider unreachable');

      issuer.setMode('up');
      expect((await call(t, await issuer.mint({ tid: T1 }))).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('before the first successful key fetch, the cooldown holds too: a burst of requests makes one IdP call', async () => {
    issuer = await startOidcIssuer();
    const { t } = await appOn(issuer.origin, undefined, { TA_ENTRA_JWKS_COOLDOWN_MS: '60000' });
    try {
      issuer.setMode('error');
      const token = await issuer.mint({ tid: T1 });
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await call(t, token)).status);
      expect(statuses).toEqual(Array(30).fill(503));
      expect(issuer.counts.metadata + issuer.counts.jwks).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('nothing listening at the authority: 503', async () => {
    issuer = await startOidcIssuer();
    const token = await issuer.mint({ tid: T1 });
    const origin = issuer.origin;
    await issuer.close();
    const { t, store } = await appOn(origin);
    try {
      const res = await call(t, token);
      expect(res.status).toBe(503);
      expect(store.commits).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('keys already cached keep working while the issuer is down; a token needing a refetch is 503', async () => {
    issuer = await startOidcIssuer();
    const { t } = await appOn(issuer.origin);
    try {
      expect((await call(t, await issuer.mint({ tid: T1 }))).status).toBe(200);
      issuer.setMode('down');
      expect((await call(t, await issuer.mint({ tid: T1 }))).status).toBe(200);
      expect((await call(t, await issuer.mint({ tid: T1, key: await issuer.foreignKey() }))).status).toBe(503);
    } finally {
      await t.close();
    }
  });
});

describe('per-agent requirements (spec.auth)', () => {
  const OPS = `
apiVersion: tealagents/v1alpha1
name: Ops
version: 1
description: Only orchestrators with the Orchestrator role
spec:
  auth:
    required_scopes: []
    required_roles: [Orchestrator]
  agent:
    name: default
    model: local/echo
    system_prompt: Be brief.
`;
  let issuer: OidcIssuer;
  let t: TestApp;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    t = await startTestApp({ agents: { 'a.yaml': AGENT, 'ops.yaml': OPS }, env: matrixEnv(issuer) });
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  const call = async (prefix: string, token: string) => {
    const res = await request(`${t.url}/${prefix}`, { body: { items: [text('x')] }, headers: { authorization: bearer(token) } });
    return res.status;
  };

  it('replaces the server-wide scopes and roles for that agent only', async () => {
    const user = await issuer.mint({ tid: T1, scp: 'agents.invoke' });
    const invoker = await issuer.mint({ tid: T1, kind: 'app', roles: ['Agents.Invoke'] });
    const orchestrator = await issuer.mint({ tid: T1, kind: 'app', roles: ['Orchestrator'] });
    expect({
      assistant: [await call('Assistant/0.1', user), await call('Assistant/0.1', invoker), await call('Assistant/0.1', orchestrator)],
      ops: [await call('Ops/1', user), await call('Ops/1', invoker), await call('Ops/1', orchestrator)],
    }).toEqual({ assistant: [200, 200, 403], ops: [403, 403, 200] });
  });

  it('still validates the token first: an invalid token is 401 on the overridden agent too', async () => {
    expect(await call('Ops/1', await issuer.mint({ tid: T1, kind: 'app', roles: ['Orchestrator'], aud: 'api://other' }))).toBe(401);
  });

  it('refuses a misspelt spec.auth key at boot', async () => {
    const typo = OPS.replace('required_roles', 'required_role');
    await expect(startTestApp({ agents: { 'ops.yaml': typo }, env: matrixEnv(issuer) })).rejects.toThrow(
      /spec\.auth\.required_role: unknown field; did you mean "required_roles"\?/,
    );
  });
});

describe('Entra ID: the validated token reaches the tools that ask for it, and only them', () => {
  const PLUGINS = `exports.plugins = [
    { name: 'Peeker', forward_token: true, tools: [{ name: 'peek', description: 'the token', risk: 'read_only', handler: (args, ctx) => 'peeker saw ' + ctx.bearerToken }] },
    { name: 'Plain', tools: [{ name: 'peek', description: 'the token?', risk: 'read_only', handler: (args, ctx) => 'plain saw ' + ctx.bearerToken }] },
  ];`;
  let issuer: OidcIssuer;
  let t: TestApp;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    const agent = v3Agent('Assistant', { version: '0.1', model: 'local/echo', plugins: ['Peeker', 'Plain'] });
    t = await startTestApp({ agents: { 'a.yaml': agent, 'custom_plugins.js': PLUGINS }, env: matrixEnv(issuer) });
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  it("a v3 turn: the forwarding plugin gets the caller's own token, the other none", async () => {
    const token = await issuer.mint({ tid: T1 });
    const res = await request(`${t.url}/Assistant/0.1`, {
      body: { items: [text('/tool Peeker-peek {}\n/tool Plain-peek {}')] },
      headers: { authorization: bearer(token) },
    });
    expect(res.status).toBe(200);
    expect(res.body.content.output).toBe(`peeker saw ${token}\nplain saw undefined`);
    // A second caller's turn sees its own token, not the first one's.
    const other = await issuer.mint({ tid: T2 });
    const again = await request(`${t.url}/Assistant/0.1`, { body: { items: [text('/tool Peeker-peek {}')] }, headers: { authorization: bearer(other) } });
    expect(again.body.content.output).toBe(`peeker saw ${other}`);
  });
});
