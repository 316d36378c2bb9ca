import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError } from '../../src/agents/config/config-error';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';
import { allBrokenProblems, BROKEN_EXPECTED as EXPECTED } from '../fixtures/config/broken-expected';

const FIXTURES = resolve(__dirname, '../fixtures/config');
const BROKEN = join(FIXTURES, 'broken');
const VALID = join(FIXTURES, 'valid');
const DEV_ENV = { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent' };

/** Boots the real application (createApp, as `serve` does) and returns the problems that stopped it. */
async function bootProblems(configPath: string, env: Record<string, string> = DEV_ENV): Promise<string[]> {
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  try {
    const { app } = await createApp({ env: loadEnvConfig(env), configPath, logDestination: sink });
    await app.close();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error(`${configPath} booted`);
}

describe('config loading: broken agent files stop the boot with every problem, file, line and field', () => {
  it('has an expectation for every broken fixture, and a fixture for every expectation', () => {
    const files = readdirSync(BROKEN)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(files).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(Object.entries(EXPECTED))('%s', async (name, expected) => {
    const file = join(BROKEN, name);
    expect(await bootProblems(file)).toEqual(expected.map((p) => `${file}${p}`));
  });

  it('reports the problems of every file of a directory at once, in file order', async () => {
    expect(await bootProblems(BROKEN)).toEqual(allBrokenProblems(BROKEN));
  });

  it('refuses two agents on one prefix, also when only the case differs', async () => {
    const dir = join(BROKEN, 'duplicate-prefix');
    expect(await bootProblems(dir)).toEqual([
      `${dir}/b-same-prefix.yaml:3: name: the prefix /MathAgent/0.1 is already served by ${dir}/a-first.yaml`,
      `${dir}/c-same-prefix-other-case.yaml:4: service_name: the prefix /mathagent/0.1 collides with /MathAgent/0.1 of ${dir}/a-first.yaml (URL paths are matched case-insensitively)`,
    ]);
  });

  it('names a missing path and an empty directory', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'ta-empty-'));
    expect(await bootProblems(join(empty, 'agents.yaml'))).toEqual([
      `${join(empty, 'agents.yaml')}: does not exist (the agent config must be a YAML file or a directory of them)`,
    ]);
    expect(await bootProblems(empty)).toEqual([`${empty}: no *.yaml or *.yml agent config in this directory (subdirectories are not read)`]);
  });
});

describe('config loading: valid agent files of all three apiVersions (upstream demos included)', () => {
  it('stops the boot when a remote model has no provider configured, naming each such agent', async () => {
    const problems = await bootProblems(VALID);
    const files = problems.map((p) => p.split(':')[0]).sort();
    expect(files).toEqual(
      ['math-agent-hitl.tealagents.yaml', 'weather-chat.v1.yaml', 'weather-sequential.v1.yaml', 'wikipedia-agent.v2alpha1.yaml'].map((f) => join(VALID, f)),
    );
    for (const p of problems) expect(p).toMatch(/model "gpt-4o[^"]*" needs a provider/);
  });

  describe('with a provider configured', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ configPath: VALID, env: { TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'never-used', TA_LOG_LEVEL: 'silent' } });
    });
    afterAll(() => t?.close());

    it('serves every agent under /{name}/{version}, by the module its apiVersion picks', () => {
      const summary = t.agents.map((a) => [a.prefix, a.module, a.kind, a.inputType, a.description]);
      expect(summary).toEqual([
        ['/VisionBot/v2', 'v1', 'Agent', 'BaseMultiModalInputWithUserContext', 'Describes images (offline demo)'],
        ['/EchoAgent/1.0', 'v2', 'Chat', 'BaseMultiModalInput', 'EchoAgent API'],
        ['/EveryField/0.1', 'v3', 'Chat', 'BaseMultiModalInput', 'An agent that uses every configuration field'],
        ['/MathAgent/0.1', 'v3', 'Chat', 'BaseMultiModalInput', 'A simple Hello World agent that greets users with their user ID from the user context'],
        ['/TaskOutputBot/0.1', 'v1', 'Sequential', 'BaseInput', "A two-step agent whose second task reads the first one's output"],
        ['/WeatherChatBot/0.1', 'v1', 'Chat', 'BaseMultiModalInput', 'A weather chat agent'],
        ['/WeatherBot/0.1', 'v1', 'Sequential', 'BaseInputWithUserContext', 'A weather chat agent'],
        ['/WikipediaAgent/0.1', 'v2', 'Chat', 'BaseMultiModalInput', 'An agent that can search Wikipedia for answers to question on a specific topic.'],
      ]);
    });

    it('answers the health route of every agent', async () => {
      for (const a of t.agents) {
        const res = await request(`${t.url}${a.prefix}/health`);
        expect([a.prefix, res.status]).toEqual([a.prefix, 200]);
      }
    });

    it('keeps every field of the every-field agent, typed', () => {
      const a = t.agents.find((x) => x.name === 'EveryField')!;
      expect(a.agent).toMatchObject({ temperature: 0.2, max_tokens: 800, reasoning_effort: 'medium', max_tool_rounds: 5 });
      expect(a.agent.mcp_servers!.map((s) => [s.name, s.transport, s.trust_level])).toEqual([
        ['everything', 'stdio', 'sandboxed'],
        ['github', 'http', 'trusted'],
        ['per-user', 'http', undefined],
      ]);
      expect(a.agent.mcp_servers![0]!.tool_governance_overrides!.get('add')).toMatchObject({ risk: 'read_only', requires_hitl: false });
      expect(a.governance.autonomy_level).toBe('L2');
      expect(a.governance.plan_threshold).toBe(4);
      expect(a.governance.tools!.get('WeatherPlugin-delete_alerts')).toMatchObject({ risk: 'write_high_risk', requires_hitl: true });
      expect(a.concurrency.on_busy).toBe('enqueue');
      expect(a.config['x-owner']).toBe('platform-team');
    });

    it('keeps task order by task_no and the temperature 0 of a Sequential / v2 agent', () => {
      const seq = t.agents.find((x) => x.name === 'TaskOutputBot')!;
      expect(seq.sequential!.tasks.map((x) => x.name)).toEqual(['action_task', 'summary_task']);
      const echo = t.agents.find((x) => x.name === 'EchoAgent')!;
      expect(echo.agent.temperature).toBe(0);
      expect(echo.agent).not.toHaveProperty('max_tokens');
    });
  });
});
