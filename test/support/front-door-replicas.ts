import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { fakeModelEnv } from './fake-model-app';
import { FakeOpenAi, startFakeOpenAi } from './fake-openai.server';
import { DEFAULT_TENANT, entraEnv, OidcIssuer, startOidcIssuer } from './oidc-issuer';
import { testRedisUrl, uniqueName } from './services';
import { startTestApp, TestApp } from './test-app';
import { NOTES_WIPE_PLUGIN, v3Agent } from './v3-agents';

/**
 * What the e2e files of the front doors (A2A, MCP, OpenAI-compatible: issue 25) share: two replicas
 * on one Redis store with Entra tokens from a local issuer that two tenants may use, a stateful
 * agent `Guard/1` whose Notes-wipe tool pauses for approval (autonomy L1) and a stateless `Echo/0.1`
 * on the offline model, and the callers: Alice and Bob of the first tenant, Carol of the second.
 */
export const SECOND_TENANT = 'c0ffee00-0000-4000-8000-0000000000b2';
export const ALICE = { tid: DEFAULT_TENANT, oid: 'a11ce000-0000-4000-8000-000000000001' };
export const BOB = { tid: DEFAULT_TENANT, oid: 'b0b00000-0000-4000-8000-000000000002' };
export const CAROL_T2 = { tid: SECOND_TENANT, oid: 'ca501000-0000-4000-8000-000000000004' };
export type Who = typeof ALICE;

export const STATELESS_ECHO = [
  'apiVersion: skagents/v2alpha1',
  'kind: Agent',
  'name: Echo',
  'version: 0.1',
  'description: Echoes',
  'spec:',
  '  agent:',
  '    name: default',
  '    model: local/echo',
  '',
].join('\n');

/** A tool call as the fake model asks for it. */
export const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

export interface FrontDoorReplicas {
  issuer: OidcIssuer;
  llm: FakeOpenAi;
  a: TestApp;
  b: TestApp;
  close(): Promise<void>;
}

/** The two replicas, their issuer and fake model; `env` adds to the server's environment. */
export async function startFrontDoorReplicas(name: string, description: string, env: Record<string, string> = {}): Promise<FrontDoorReplicas> {
  const issuer = await startOidcIssuer();
  const llm = await startFakeOpenAi();
  const keyPrefix = `${uniqueName(name)}:`;
  const serverEnv = fakeModelEnv(
    llm,
    entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: `${DEFAULT_TENANT},${SECOND_TENANT}`, TA_ENTRA_TENANT_ID: DEFAULT_TENANT, ...env }),
  );
  const guard = v3Agent('Guard', { description, plugins: ['Notes'], governance: { autonomy_level: 'L1' } });
  const agents = { 'guard.yaml': guard, 'echo.yaml': STATELESS_ECHO, 'custom_plugins.js': NOTES_WIPE_PLUGIN };
  const start = () => startTestApp({ agents, env: serverEnv, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) });
  const [a, b] = await Promise.all([start(), start()]);
  return {
    issuer,
    llm,
    a,
    b,
    close: async () => {
      await Promise.all([a.close(), b.close()]);
      await issuer.close();
      await llm.close();
    },
  };
}
