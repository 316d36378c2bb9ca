import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError } from '../../src/agents/config/config-error';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { reply } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { parseSse } from '../support/sse-reader';
import { startTestApp, writeAgentDir } from '../support/test-app';

/**
 * Upstream's app.py serves every `skagents/*` apiVersion but v2alpha1 with its V1 app (its own
 * tests use `skagents/v1alpha1`); so does this server: v1 fields, v1 routes, v1 responses.
 */
const V1ALPHA1 = resolve(__dirname, '../fixtures/upstream/v1alpha1');

async function bootProblems(configPath: string): Promise<string[]> {
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  try {
    const { app } = await createApp({ env: loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent' }), configPath, logDestination: sink });
    await app.close();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error(`${configPath} booted`);
}

describe('apiVersion skagents/v1alpha1 (upstream fixtures) is served as skagents/v1', () => {
  let f: FakeModelApp;
  beforeAll(async () => {
    f = await startFakeModelApp({ configPath: V1ALPHA1 });
  });
  afterAll(() => f.close());

  it('serves each agent under /{service_name}/{version} by the v1 module', () => {
    expect(f.t.agents.map((a) => [a.prefix, a.module, a.kind, a.inputType])).toEqual([
      ['/LegacyChat/0.3', 'v1', 'Chat', 'BaseMultiModalInput'],
      ['/LegacySequential/1.0', 'v1', 'Sequential', 'BaseInputWithUserContext'],
    ]);
  });

  it('a Chat agent answers the v1 InvokeResponse', async () => {
    f.llm.script(reply.text('Hi!', { usage: { prompt_tokens: 5, completion_tokens: 2 } }));
    const res = await postJson(`${f.t.url}/LegacyChat/0.3`, { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'hello' }] }] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      source: 'LegacyChat:0.3',
      request_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      token_usage: { completion_tokens: 2, prompt_tokens: 5, total_tokens: 7 },
      extra_data: null,
      output_raw: 'Hi!',
      output_pydantic: null,
    });
    expect(f.llm.requests.at(-1)!.body.model).toBe('gpt-4o-mini');
  });

  it("a Sequential agent renders its task template with the caller's user_context, and streams over /sse", async () => {
    f.llm.script(reply.chunks(['Sunny ', 'in Oslo']));
    const res = await request(`${f.t.url}/LegacySequential/1.0/sse`, {
      body: { chat_history: [{ role: 'user', content: 'weather?' }], user_context: { 'User Location': 'Oslo' } },
    });
    expect(res.status).toBe(200);
    const final = parseSse(res.text).find((e) => e.event === 'final-response')!;
    expect(JSON.parse(final.data)).toMatchObject({ source: 'LegacySequential:1.0', output_raw: 'Sunny in Oslo' });
    expect(JSON.stringify(f.llm.requests.at(-1)!.body.messages)).toContain('They are in Oslo.');
  });

  it('has no stateful (v3) routes', async () => {
    const res = await request(`${f.t.url}/LegacyChat/0.3/tasks/${randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
  });
});

describe('apiVersion: which skagents/* versions are v1', () => {
  const agent = (apiVersion: string, nameField: string) => `apiVersion: ${apiVersion}
kind: Chat
${nameField}
version: 0.1
input_type: BaseInput
spec:
  agent:
    name: default
    model: local/echo
`;

  it('any skagents/* but v2alpha1 is v1 (named by service_name); v2alpha1 stays v2 (named by name)', async () => {
    const t = await startTestApp({
      agents: {
        'beta.yaml': agent('skagents/v1beta2', 'service_name: BetaBot'),
        'v2.yaml': agent('skagents/v2alpha1', 'name: V2Bot'),
      },
      env: { TA_LOG_LEVEL: 'silent' },
    });
    try {
      expect(t.agents.map((a) => [a.prefix, a.module])).toEqual([
        ['/BetaBot/0.1', 'v1'],
        ['/V2Bot/0.1', 'v2'],
      ]);
      const res = await postJson(`${t.url}/BetaBot/0.1`, { chat_history: [{ role: 'user', content: 'echo me' }] });
      expect(res.body).toMatchObject({ source: 'BetaBot:0.1', output_raw: 'echo me' });
    } finally {
      await t.close();
    }
  });

  it('holds a v1alpha1 file to the v1 fields: without service_name, kind and input_type the boot names each', async () => {
    const dir = writeAgentDir({
      'a.yaml': 'apiVersion: skagents/v1alpha1\nname: NotEnough\nversion: 0.1\nspec:\n  agent:\n    name: default\n    model: local/echo\n',
    });
    const file = join(dir, 'a.yaml');
    expect(await bootProblems(dir)).toEqual([
      `${file}:1: service_name: is required for skagents/v1 (the agent name; name is read only by the other apiVersions)`,
      `${file}:1: kind: is required for skagents/v1 (Chat, Agent, Sequential)`,
      `${file}:1: input_type: is required for skagents/v1 (one of BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext)`,
    ]);
  });

  it.each(['tealagents/v2', 'tealagents/v1', 'skagents/v1/extra', 'v1'])('refuses %s, as upstream does', async (apiVersion) => {
    const dir = writeAgentDir({ 'a.yaml': agent(apiVersion, 'service_name: Nope') });
    const problems = await bootProblems(dir);
    expect(problems[0]).toBe(
      `${join(dir, 'a.yaml')}:1: apiVersion: must be one of skagents/v1, skagents/v2alpha1, tealagents/v1alpha1, or another skagents/* version, served as skagents/v1 (got the string ${JSON.stringify(apiVersion)})`,
    );
  });
});
