import { join, resolve } from 'node:path';
import { loadEnvConfig } from '../../src/config/env.config';
import { postJson, request } from '../support/http';
import { startTestApp } from '../support/test-app';

/**
 * README, "Pointing it at a real model": the directory its commands serve exists and boots with a
 * provider set, sends the model call to that provider, and the default auth mode's failure tells
 * a newcomer that dev mode exists.
 */
const CONFIG_AGENTS = join(resolve(__dirname, '../..'), 'config', 'agents');

describe('README real-model examples (config/agents)', () => {
  it('serve config/agents with TA_BASE_URL: boots, and the agent calls that provider', async () => {
    // Nothing listens on port 9: the call must reach the configured provider and fail there.
    const t = await startTestApp({ configPath: CONFIG_AGENTS, env: { TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_LLM_MAX_RETRIES: '0' } });
    try {
      expect((await request(`${t.url}/health/live`)).status).toBe(200);
      const res = await postJson(`${t.url}/Assistant/1.0`, { items: [{ content_type: 'text', content: 'hello' }] });
      expect(res.status).toBe(502);
      expect(res.body.code).toBe('LLM_UNAVAILABLE');
    } finally {
      await t.close();
    }
  });

  it('without TA_AUTH_MODE, every missing Entra setting names dev mode as the local alternative', () => {
    expect(() => loadEnvConfig({ TA_BASE_URL: 'http://127.0.0.1:9/v1' })).toThrow(/TA_ENTRA_AUDIENCE is required .*TA_AUTH_MODE=dev is for local development/);
  });
});
