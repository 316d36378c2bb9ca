import { DEV_OWNER_ID, DEV_TENANT_ID } from '../../src/auth/principal';
import { EnvConfigError } from '../../src/config/env.config';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { postJson, request } from '../support/http';
import { entraEnv, startOidcIssuer } from '../support/oidc-issuer';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';

/**
 * TA_AUTH_MODE=dev (the embedded default of scripts/start.sh): a fixed development identity, an
 * optional X-Dev-User header to try two users, a loud warning at boot, and a refusal to start in
 * production. Everywhere else entra is the default.
 */

const AGENT = v3Agent('Assistant', { version: '0.1', description: 'Dev mode test agent', model: 'local/echo' });

const DEV_WARNING = /TA_AUTH_MODE=dev: requests are NOT authenticated/;

describe('TA_AUTH_MODE=dev', () => {
  let t: TestApp;
  let store: MemoryStateStore;
  let base: string;
  beforeAll(async () => {
    store = new MemoryStateStore();
    t = await startTestApp({ agents: { 'a.yaml': AGENT }, env: { TA_AUTH_MODE: 'dev' }, store });
    base = `${t.url}/Assistant/0.1`;
  });
  afterAll(() => t.close());

  it('warns at boot, at warn level', () => {
    const warning = t.logs().find((l) => DEV_WARNING.test(String(l.msg)));
    expect(warning).toMatchObject({ level: 'warn' });
  });

  it('accepts requests without a token as the fixed development identity', async () => {
    const res = await postJson(base, { items: [text('hi')] });
    expect(res.status).toBe(200);
    expect(await store.getTask(DEV_TENANT_ID, res.body.task_id)).toMatchObject({ tenantId: DEV_TENANT_ID, ownerId: DEV_OWNER_ID });
  });

  it('X-Dev-User picks another owner in the development tenant, and ownership applies between them', async () => {
    const alice = { 'x-dev-user': 'alice' };
    const bob = { 'x-dev-user': 'bob' };
    const created = await postJson(base, { items: [text('mine')] }, alice);
    expect(await store.getTask(DEV_TENANT_ID, created.body.task_id)).toMatchObject({ ownerId: 'alice' });
    expect((await postJson(base, { items: [text('x')], task_id: created.body.task_id }, bob)).status).toBe(401);
    expect((await request(`${base}/tasks/${created.body.task_id}`, { headers: bob })).status).toBe(404);
    expect((await request(`${base}/tasks/${created.body.task_id}`, { headers: alice })).status).toBe(200);
    // Without the header it is the default developer, who is not alice either.
    expect((await request(`${base}/tasks/${created.body.task_id}`)).status).toBe(404);
  });

  it('ignores an X-Dev-User value that is not a plain user name', async () => {
    const res = await postJson(base, { items: [text('x')] }, { 'x-dev-user': 'alice bob/../admin' });
    expect(res.status).toBe(200);
    expect(await store.getTask(DEV_TENANT_ID, res.body.task_id)).toMatchObject({ ownerId: DEV_OWNER_ID });
  });
});

describe('auth mode at boot', () => {
  it('refuses to start in dev mode when NODE_ENV=production, naming the variable', async () => {
    const boot = startTestApp({ agents: { 'a.yaml': AGENT }, env: { TA_AUTH_MODE: 'dev', NODE_ENV: 'production' } });
    await expect(boot).rejects.toBeInstanceOf(EnvConfigError);
    await expect(boot).rejects.toThrow(/TA_AUTH_MODE=dev is refused when NODE_ENV=production/);
  });

  it('refuses dev mode for a production-like NODE_ENV in any spelling', async () => {
    for (const nodeEnv of ['Production', 'prod']) {
      const boot = startTestApp({ agents: { 'a.yaml': AGENT }, env: { TA_AUTH_MODE: 'dev', NODE_ENV: nodeEnv } });
      await expect(boot).rejects.toThrow(`TA_AUTH_MODE=dev is refused when NODE_ENV=${nodeEnv}`);
    }
  });

  it('defaults to entra, which will not start without its settings', async () => {
    // An empty value means unset, so this removes the test helper's TA_AUTH_MODE=dev.
    const boot = startTestApp({ agents: { 'a.yaml': AGENT }, env: { TA_AUTH_MODE: '' } });
    await expect(boot).rejects.toThrow(/TA_ENTRA_AUDIENCE is required when TA_AUTH_MODE=entra, the default/);
  });

  it('in entra mode: no dev warning, requests need a token, and an X-Dev-User header changes nothing', async () => {
    const issuer = await startOidcIssuer();
    const t = await startTestApp({
      agents: { 'a.yaml': AGENT },
      env: entraEnv(issuer, { NODE_ENV: 'production' }),
    });
    try {
      expect(t.rawLogs()).not.toMatch(DEV_WARNING);
      expect(t.rawLogs()).toContain('Entra ID bearer authentication enabled');
      const res = await postJson(`${t.url}/Assistant/0.1`, { items: [text('x')] }, { 'x-dev-user': 'alice' });
      expect(res.status).toBe(401);
    } finally {
      await t.close();
      await issuer.close();
    }
  });
});
