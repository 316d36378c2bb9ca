import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { postJson } from '../support/http';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { openSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

/** Which provider serves a remote model: Azure OpenAI's request shape, and the boot-time refusal. */

const agent = (model: string) => `
apiVersion: skagents/v2alpha1
name: Bot
version: 1
spec:
  agent:
    name: default
    model: ${model}
    system_prompt: Be brief.
`;
const AZURE_KEY = 'azure-key-5f1c9a0b7d3e';

describe('Azure OpenAI', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    t = await startTestApp({
      agents: { 'bot.yaml': agent('my-gpt4o-deployment') },
      env: {
        TA_AZURE_OPENAI_ENDPOINT: `${fake.url}/`,
        TA_AZURE_OPENAI_API_VERSION: '2024-10-21',
        TA_API_KEY: AZURE_KEY,
        TA_LLM_MAX_RETRIES: '0',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('calls the deployment path with api-version and the api-key header', async () => {
    fake.script(reply.text('Hi from Azure', { usage: { prompt_tokens: 5, completion_tokens: 3 } }));
    const res = await postJson(`${t.url}/Bot/1`, { chat_history: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ output_raw: 'Hi from Azure', token_usage: { completion_tokens: 3, prompt_tokens: 5, total_tokens: 8 } });
    const call = fake.requests.at(-1)!;
    expect(call.path).toBe('/openai/deployments/my-gpt4o-deployment/chat/completions');
    expect(call.query).toEqual({ 'api-version': '2024-10-21' });
    expect(call.headers['api-key']).toBe(AZURE_KEY);
    expect(call.headers.authorization).toBeUndefined();
    expect(call.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('streams through the deployment path too', async () => {
    fake.script(reply.chunks(['Az', 'ure']));
    const sse = await openSse(`${t.url}/Bot/1/sse`, { chat_history: [{ role: 'user', content: 'hi' }] });
    const text = await sse.readAll();
    expect(text).toContain('"output_partial":"Az"');
    expect(text).toContain('"output_raw":"Azure"');
    expect(fake.requests.at(-1)!.deployment).toBe('my-gpt4o-deployment');
    expect(fake.requests.at(-1)!.body.stream).toBe(true);
  });

  it('never writes the key to the log, on success or failure', async () => {
    fake.script(reply.error(500));
    expect((await postJson(`${t.url}/Bot/1`, { chat_history: [{ role: 'user', content: 'hi' }] })).status).toBe(502);
    expect(t.rawLogs().length).toBeGreaterThan(0);
    expect(t.rawLogs()).not.toContain(AZURE_KEY);
  });
});

describe('boot without a provider', () => {
  const boot = (env: Record<string, string>, model: string) =>
    createApp({ env: loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent', ...env }), configPath: writeAgentDir({ 'bot.yaml': agent(model) }) });

  it('refuses a remote model when no provider is configured, naming TA_API_KEY and TA_BASE_URL', async () => {
    const err = await boot({}, 'gpt-4o').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toContain('bot.yaml');
    expect(err!.message).toContain('spec.agent.model');
    expect(err!.message).toContain('TA_API_KEY');
    expect(err!.message).toContain('TA_BASE_URL');
  });

  it('refuses Azure OpenAI without TA_API_KEY', async () => {
    await expect(boot({ TA_AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com' }, 'gpt-4o')).rejects.toThrow(/TA_API_KEY/);
  });

  it('boots a local/echo agent with no provider at all', async () => {
    const { app } = await boot({}, 'local/echo');
    await app.close();
  });
});
