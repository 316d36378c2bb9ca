import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { loadEnvConfig } from '../../config/env.config';
import { consoleAsset, consoleCsp } from './console-assets';
import { consoleConfig } from './console.controller';

const agent = { name: 'Desk', version: '1', apiVersion: 'tealagents/v1alpha1', prefix: '/Desk/1', module: 'v3', description: 'd' } as AgentDefinition;
const TENANT = '11111111-2222-3333-4444-555555555555';
const entra = (vars: Record<string, string>) =>
  loadEnvConfig({ TA_AUTH_MODE: 'entra', TA_ENTRA_TENANT_ID: TENANT, TA_ENTRA_AUDIENCE: 'abc', TA_ENTRA_REQUIRED_SCOPES: 'Agents.Call', ...vars });

describe('console config', () => {
  it('dev auth: no MSAL, the agents with their prefixes', () => {
    const env = loadEnvConfig({ TA_AUTH_MODE: 'dev' });
    expect(env.console).toEqual({ enabled: true, clientId: undefined, scopes: [] });
    expect(consoleConfig(env, [agent])).toEqual({
      auth_mode: 'dev',
      msal: null,
      agents: [{ name: 'Desk', version: '1', api_version: 'tealagents/v1alpha1', prefix: '/Desk/1', stateful: true, description: 'd' }],
    });
  });

  it('Entra with TA_CONSOLE_CLIENT_ID: MSAL signs in at the tenant, for the API audience', () => {
    const env = entra({ TA_CONSOLE_CLIENT_ID: 'spa-id' });
    expect(consoleConfig(env, []).msal).toEqual({
      client_id: 'spa-id',
      authority: `https://login.microsoftonline.com/${TENANT}`,
      scopes: ['api://abc/.default'],
    });
    const scoped = entra({ TA_CONSOLE_CLIENT_ID: 'spa-id', TA_CONSOLE_SCOPES: 'api://x/Agents.Call' });
    expect(consoleConfig(scoped, []).msal?.scopes).toEqual(['api://x/Agents.Call']);
    expect(consoleConfig(entra({}), []).msal).toBeNull();
  });

  it('TA_CONSOLE=false turns it off', () => {
    expect(loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_CONSOLE: 'false' }).console.enabled).toBe(false);
  });
});

describe('console assets', () => {
  it('the policy admits this origin only, plus the sign-in authority when MSAL is on', () => {
    expect(consoleCsp()).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(consoleCsp('https://login.microsoftonline.com/t')).toContain(
      "connect-src 'self' https://login.microsoftonline.com; frame-src https://login.microsoftonline.com",
    );
  });

  it('serves built files by name only, of the known types', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-console-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'assets', 'index-abc.js'), 'x');
    writeFileSync(join(dir, 'secret.txt'), 'no');
    expect(consoleAsset(dir, 'index-abc.js')).toEqual({ body: Buffer.from('x'), type: 'application/javascript; charset=utf-8' });
    expect(consoleAsset(dir, 'missing.js')).toBeUndefined();
    expect(consoleAsset(dir, '..%2Fsecret.txt')).toBeUndefined();
    expect(consoleAsset(dir, '../secret.js')).toBeUndefined();
  });
});
