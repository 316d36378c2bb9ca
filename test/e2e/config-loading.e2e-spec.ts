import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError } from '../../src/agents/config/config-error';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

const FIXTURES = resolve(__dirname, '../fixtures/config');
const BROKEN = join(FIXTURES, 'broken');
const VALID = join(FIXTURES, 'valid');
const DEV_ENV = { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent' };
const PROVIDER_ENV = { ...DEV_ENV, TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'never-used' };

/**
 * Every broken fixture and exactly what the boot says about it, after the file's absolute path:
 * `:line: field.path: message` (`:line:column:` for YAML syntax, `: message` for the whole file).
 */
const EXPECTED: Record<string, string[]> = {
  'agent-field-unknown.yaml': [
    ':9: spec.agent.temprature: unknown field; did you mean "temperature"?',
  ],
  'agent-max-tokens-zero.yaml': [
    ':9: spec.agent.max_tokens: must be an integer >= 1 (got 0)',
  ],
  'agent-max-tool-rounds-zero.yaml': [
    ':9: spec.agent.max_tool_rounds: must be an integer >= 1 (got 0)',
  ],
  'agent-model-local-unknown.yaml': [
    ':8: spec.agent.model: unknown built-in model "local/llama" (built-in models: local/echo)',
  ],
  'agent-model-missing.yaml': [
    ':6: spec.agent.model: is required (a non-empty string)',
  ],
  'agent-plugins-not-a-list.yaml': [
    ':9: spec.agent.plugins: must be a list of non-empty strings (got the string "WeatherPlugin")',
  ],
  'agent-reasoning-effort-unknown.yaml': [
    ':9: spec.agent.reasoning_effort: must be one of minimal, low, medium, high (got the string "extreme")',
  ],
  'agent-temperature-out-of-range.yaml': [
    ':9: spec.agent.temperature: must be a number from 0 to 2 (got 2.5)',
  ],
  'agent-temperature-string.yaml': [
    ':9: spec.agent.temperature: must be a number from 0 to 2 (got the string "0.5")',
  ],
  'api-version-missing.yaml': [
    ':2: apiVersion: is required (one of skagents/v1, skagents/v2alpha1, tealagents/v1alpha1)',
  ],
  'api-version-unknown.yaml': [
    ':2: apiVersion: must be one of skagents/v1, skagents/v2alpha1, tealagents/v1alpha1 (got the string "skagents/v3")',
  ],
  'concurrency-on-busy-unknown.yaml': [
    ':10: spec.concurrency.on_busy: must be one of reject, enqueue (got the string "queue")',
  ],
  'empty.yaml': [
    ': the file is empty (expected an agent config: apiVersion, name, version, spec, ...)',
  ],
  'governance-autonomy-unknown.yaml': [
    ':10: spec.governance.autonomy_level: must be one of L0, L1, L2, L3 (got the string "L4")',
  ],
  'governance-plan-threshold-zero.yaml': [
    ':10: spec.governance.plan_threshold: must be an integer >= 1 (got 0)',
  ],
  'governance-tool-risk-unknown.yaml': [
    ':12: spec.governance.tools.sensitive_plugin-delete_user_data.risk: must be one of read_only, write_low_risk, write_high_risk (got the string "dangerous")',
  ],
  'mcp-auth-server-without-scopes.yaml': [
    ':10: spec.agent.mcp_servers.0.scopes: is required when auth_server is given (auth_server and scopes go together)',
  ],
  'mcp-duplicate-names.yaml': [
    ':13: spec.agent.mcp_servers.1.name: duplicate MCP server name "tools"',
  ],
  'mcp-http-url-not-http.yaml': [
    ':12: spec.agent.mcp_servers.0.url: must be an http:// or https:// URL (got the string "localhost:3000/mcp")',
  ],
  'mcp-stdio-shell-characters.yaml': [
    ':11: spec.agent.mcp_servers.0.command: must not contain any of ; & | ` $ (got the string "npx server; rm -rf /")',
  ],
  'mcp-stdio-without-command.yaml': [
    ':10: spec.agent.mcp_servers.0.command: is required for the stdio transport (the program to start)',
  ],
  'mcp-trust-level-unknown.yaml': [
    ':13: spec.agent.mcp_servers.0.trust_level: must be one of trusted, sandboxed, untrusted (got the string "full")',
  ],
  'metadata-description-missing.yaml': [
    ':5: metadata.description: is required (a string)',
  ],
  'metadata-skill-tags-missing.yaml': [
    ':8: metadata.skills.0.tags: is required (a list of non-empty strings)',
  ],
  'name-missing.yaml': [
    ':2: name: is required (the agent name, a URL-safe string)',
  ],
  'name-not-url-safe.yaml': [
    ':3: name: must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got the string "Math Agent")',
  ],
  'not-a-mapping.yaml': [
    ': the file must hold one YAML mapping (an agent config), not a list',
  ],
  'sequential-duplicate-task-no.yaml': [
    ':17: spec.tasks.1.task_no: duplicate task_no 1',
  ],
  'sequential-task-bad-template.yaml': [
    ':14: spec.tasks.0.instructions: invalid template: unsupported expression "number_1 + number_2" (only names, .attr and ["key"] are supported)',
  ],
  'sequential-task-unclosed-for.yaml': [
    ':14: spec.tasks.0.instructions: invalid template: a {% for %} has no {% endfor %}',
  ],
  'sequential-task-unknown-agent.yaml': [
    ':15: spec.tasks.0.agent: no agent named "planner" in spec.agents (agents: "default")',
  ],
  'sequential-without-tasks.yaml': [
    ':7: spec.tasks: kind: Sequential needs at least one task in spec.tasks',
  ],
  'service-name-missing.yaml': [
    ':2: service_name: is required for skagents/v1 (the agent name; name is read only by the other apiVersions)',
  ],
  'several-problems.yaml': [
    ':4: service_name: must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got the string "Planner Bot")',
    ':6: input_type: "NumbersInput" looks like a custom input type (a Python class), which this server cannot load: use one of BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext',
    ':10: spec.agents.0.model: unknown built-in model "local/unknown" (built-in models: local/echo)',
    ':11: spec.agents.0.temperature: must be a number from 0 to 2 (got the string "hot")',
    ':12: spec.agents.0.max_tokens: must be an integer >= 1 (got -5)',
    ':13: spec.agents.1.name: duplicate agent name "default"',
    ':15: spec.agents.1.plugins: item 1 must be a non-empty string (got 42)',
    ':19: spec.tasks.0.instructions: invalid template: an {% if %} has no {% endif %}',
    ':20: spec.tasks.0.agent: no agent named "planner" in spec.agents (agents: "default")',
    ':22: spec.tasks.1.task_no: must be an integer >= 0 (got the string "first")',
    ':26: spec.governance.autonomy_level: must be one of L0, L1, L2, L3 (got the string "L9")',
    ':27: spec.governance.tools: the value of "plan-tool" must be a mapping of settings (got the string "always")',
    ':30: spec.concurrency.on_busy: must be one of reject, enqueue (got the string "later")',
    ':31: spec.concurency: unknown field; did you mean "concurrency"?',
  ],
  'spec-agent-fields-directly-under-spec.yaml': [
    ':6: spec.agent: is required (found name, model, system_prompt directly under spec: move them under spec.agent)',
    ':7: spec.name: unknown field (allowed here: agent, agents, tasks, governance, concurrency)',
    ':8: spec.model: unknown field (allowed here: agent, agents, tasks, governance, concurrency)',
    ':9: spec.system_prompt: unknown field (allowed here: agent, agents, tasks, governance, concurrency)',
  ],
  'spec-agent-missing.yaml': [
    ':5: spec.agent: is required (the agent: name, model, system_prompt, ...)',
  ],
  'spec-missing.yaml': [
    ':2: spec: is required (a mapping)',
  ],
  'spec-tasks-on-chat.yaml': [
    ':9: spec.tasks: is only for skagents/v1 kind: Sequential, not tealagents/v1alpha1',
  ],
  'v1-input-type-custom.yaml': [
    ':6: input_type: "NumbersInput" looks like a custom input type (a Python class), which this server cannot load: use one of BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext',
  ],
  'v1-input-type-missing.yaml': [
    ':2: input_type: is required for skagents/v1 (one of BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext)',
  ],
  'v1-kind-missing.yaml': [
    ':2: kind: is required for skagents/v1 (Chat, Agent, Sequential)',
  ],
  'v1-kind-unknown.yaml': [
    ':3: kind: must be one of Chat, Agent, Sequential (got the string "Workflow")',
  ],
  'v1-output-type.yaml': [
    ':7: output_type: custom output types (Python classes) are not supported: remove output_type (got the string "AddOutput")',
  ],
  'version-missing.yaml': [
    ':2: version: is required (a version such as 0.1 or v1)',
  ],
  'version-not-url-safe.yaml': [
    ':4: version: must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got the string "1.0/beta")',
  ],
  'yaml-duplicate-key.yaml': [
    ':5:1: YAML syntax error: Map keys must be unique',
  ],
  'yaml-syntax-error.yaml': [
    ':10:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
  ],
  'yaml-two-documents.yaml': [
    ':9:1: YAML syntax error: the file holds more than one YAML document (---): put one agent per file',
  ],
};

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
    const files = readdirSync(BROKEN).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(Object.entries(EXPECTED))('%s', async (name, expected) => {
    const file = join(BROKEN, name);
    expect(await bootProblems(file)).toEqual(expected.map((p) => `${file}${p}`));
  });

  it('reports the problems of every file of a directory at once, in file order', async () => {
    const all = Object.keys(EXPECTED)
      .sort()
      .flatMap((name) => EXPECTED[name]!.map((p) => `${join(BROKEN, name)}${p}`));
    expect(await bootProblems(BROKEN)).toEqual(all);
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
      ['math-agent-hitl.tealagents.yaml', 'weather-chat.v1.yaml', 'weather-sequential.v1.yaml', 'wikipedia-agent.v2alpha1.yaml'].map((f) =>
        join(VALID, f),
      ),
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
        [
          '/MathAgent/0.1',
          'v3',
          'Chat',
          'BaseMultiModalInput',
          'A simple Hello World agent that greets users with their user ID from the user context',
        ],
        ['/TaskOutputBot/0.1', 'v1', 'Sequential', 'BaseInput', "A two-step agent whose second task reads the first one's output"],
        ['/WeatherChatBot/0.1', 'v1', 'Chat', 'BaseMultiModalInput', 'A weather chat agent'],
        ['/WeatherBot/0.1', 'v1', 'Sequential', 'BaseInputWithUserContext', 'A weather chat agent'],
        [
          '/WikipediaAgent/0.1',
          'v2',
          'Chat',
          'BaseMultiModalInput',
          'An agent that can search Wikipedia for answers to question on a specific topic.',
        ],
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
