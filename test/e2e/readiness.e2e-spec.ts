import { request } from '../support/http';
import { McpTestServer, startMcpTestServer } from '../support/mcp-test-server';
import { DEFAULT_TENANT, entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const agent = (name: string, mcp = '') => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: Readiness e2e
spec:
  agent:
    name: default
    model: local/echo
${mcp}`;

const requiredMcp = (url: string) => `    mcp_servers:
      - name: test
        transport: http
        url: ${url}
        timeout: 1
        required: true
`;

describe('readiness with a required MCP server (real MCP server over HTTP, stopped mid-test)', () => {
  let mcp: McpTestServer;
  let t: TestApp;

  beforeAll(async () => {
    mcp = await startMcpTestServer();
    t = await startTestApp({ agents: { 'needy.yaml': agent('Needy', requiredMcp(mcp.url)), 'plain.yaml': agent('Plain') } });
  });
  afterAll(async () => {
    await t?.close();
    await mcp?.stop();
  });

  const get = (path: string) => request(`${t.url}${path}`);

  it('is ready while the server answers: every dependency listed with its state', async () => {
    const root = await get('/health/ready');
    expect(root.status).toBe(200);
    expect(root.body).toEqual({
      ready: true,
      timestamp: expect.any(String),
      dependencies: [
        { name: 'config', state: 'up' },
        { name: 'state_store', state: 'up' },
        { name: 'mcp_server:test', state: 'up', agent: 'Needy:1' },
      ],
    });
    expect((await get('/health/live')).body).toEqual({ alive: true, timestamp: expect.any(String) });
    // The agent's own readiness keeps its shape, with its own MCP server; the other agent's does not wait for it.
    const needy = await get('/Needy/1/health/ready');
    expect(needy.status).toBe(200);
    expect(needy.body.checks).toEqual({ config: { status: 'up' }, state_store: { status: 'up' }, 'mcp_server:test': { status: 'up' } });
    expect((await get('/Plain/1/health/ready')).body.checks).toEqual({ config: { status: 'up' }, state_store: { status: 'up' } });
  });

  it('is not ready (503) once the server is gone, naming it; the agent says so when asked for a tool', async () => {
    await mcp.stop();
    const root = await get('/health/ready');
    expect(root.status).toBe(503);
    expect(root.body.ready).toBe(false);
    const down = root.body.dependencies.find((d: { name: string }) => d.name === 'mcp_server:test');
    expect(down).toEqual({ name: 'mcp_server:test', state: 'down', agent: 'Needy:1', detail: expect.stringMatching(/^MCP server test unreachable: /) });
    expect(root.body.dependencies.filter((d: { state: string }) => d.state === 'down')).toHaveLength(1);

    const needy = await get('/Needy/1/health/ready');
    expect(needy.status).toBe(503);
    expect(needy.body.checks['mcp_server:test']).toEqual({ status: 'down', error: expect.stringMatching(/^MCP server test unreachable/) });
    expect((await get('/Plain/1/health/ready')).status).toBe(200);
    expect((await get('/health/live')).status).toBe(200);

    const answer = await v3Client(`${t.url}/Needy/1`).say('/tool test-echo {"text": "hi"}');
    expect(answer.status).toBe(200);
    expect(answer.body.content.output).toBe('Unknown tool test-echo. The tools of this agent: none; MCP server test unreachable.');
  });

  it('is ready again once the server is back', async () => {
    await mcp.start();
    const root = await get('/health/ready');
    expect(root.status).toBe(200);
    expect(root.body.dependencies).toContainEqual({ name: 'mcp_server:test', state: 'up', agent: 'Needy:1' });
  });
});

describe('readiness in Entra mode: the identity provider', () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  const withCooldown = (cooldownMs: number) => entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: DEFAULT_TENANT, TA_ENTRA_JWKS_COOLDOWN_MS: String(cooldownMs) });

  beforeEach(async () => {
    issuer = await startOidcIssuer();
  });
  afterEach(async () => {
    await t?.close();
    await issuer?.close();
  });

  const idp = async () => {
    const res = await request(`${t.url}/health/ready`);
    return { status: res.status, dep: res.body.dependencies.find((d: { name: string }) => d.name === 'identity_provider') };
  };

  it('is up once the metadata and keys are fetched, and stays up while the provider is down (the keys in hand still work)', async () => {
    t = await startTestApp({ agents: { 'a.yaml': agent('A') }, env: withCooldown(0) });
    expect(await idp()).toEqual({ status: 200, dep: { name: 'identity_provider', state: 'up' } });
    expect(issuer.counts.jwks).toBe(1);
    issuer.setMode('down');
    expect(await idp()).toEqual({ status: 200, dep: { name: 'identity_provider', state: 'up' } });
    expect(issuer.counts.jwks).toBe(1); // probes do not refetch keys in hand
  });

  it('is down (503) while no keys could be fetched, and probes fetch no more often than the key cooldown allows', async () => {
    issuer.setMode('down');
    t = await startTestApp({ agents: { 'a.yaml': agent('A') }, env: withCooldown(60_000) });
    const first = await idp();
    expect(first.status).toBe(503);
    expect(first.dep).toEqual({
      name: 'identity_provider',
      state: 'down',
      detail: expect.stringContaining(`metadata or signing keys not fetched from ${issuer.origin}/`),
    });
    const attempts = issuer.counts.metadata + issuer.counts.jwks;
    issuer.setMode('up');
    expect((await idp()).status).toBe(503); // within the cooldown: the last failure is the answer
    expect(issuer.counts.metadata + issuer.counts.jwks).toBe(attempts);
  });
});
