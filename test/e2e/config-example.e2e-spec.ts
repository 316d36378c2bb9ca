import { getMetadataStorage } from 'class-validator';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AgentSpecConfig, SequentialTaskConfig } from '../../src/agents/config/agent.schema';
import { AgentFileConfig, MetadataConfig, SkillConfig, SpecConfig } from '../../src/agents/config/agent-file.schema';
import { ConcurrencyConfig, GovernanceConfig, ToolPolicy } from '../../src/agents/config/governance.schema';
import { loadAgentConfigs } from '../../src/agents/config/load-agent-configs';
import { McpServerConfig, ToolGovernanceOverride } from '../../src/agents/config/mcp-server.schema';
import { WebhookConfig } from '../../src/agents/config/webhooks.schema';
import { request } from '../support/http';
import { startTestApp, TestApp } from '../support/test-app';

/** config/agents.example.yaml is documentation users copy from: it must load, and cover every field. */
const EXAMPLE = resolve(__dirname, '../../config/agents.example.yaml');
const text = readFileSync(EXAMPLE, 'utf8');

/** The commented-out agents between `# ---8<--- title` and `# --->8---`, uncommented. */
function commentedAgents(): { title: string; yaml: string }[] {
  const blocks = [...text.matchAll(/^# ---8<--- (.+)\n([\s\S]*?)^# --->8---$/gm)];
  return blocks.map(([, title, body]) => ({ title: title!, yaml: body!.replace(/^# ?/gm, '') }));
}

describe('config/agents.example.yaml', () => {
  it('loads as one tealagents/v1alpha1 agent with the documented values', () => {
    const [agent, ...others] = loadAgentConfigs(EXAMPLE);
    expect(others).toEqual([]);
    expect(agent).toMatchObject({ apiVersion: 'tealagents/v1alpha1', module: 'v3', prefix: '/ExampleAgent/0.1' });
    expect(agent!.description).toBe('A documented example agent: it repeats your last message (model local/echo).');
    expect(agent!.agent).toMatchObject({ model: 'local/echo', temperature: 0.2, max_tokens: 800, reasoning_effort: 'low', max_tool_rounds: 10 });
    expect(agent!.agent.mcp_servers!.map((s) => `${s.name}:${s.transport}`)).toEqual(['everything:stdio', 'github:http']);
    expect(agent!.governance).toMatchObject({ autonomy_level: 'L1', plan_threshold: 3 });
    expect([...agent!.governance.tools!.keys()]).toEqual(['WeatherPlugin-get_forecast', 'WeatherPlugin-cancel_alerts']);
    expect(agent!.concurrency.on_busy).toBe('reject');
    expect(agent!.config['x-owner']).toBe('platform-team');
  });

  it('holds one complete agent for each other apiVersion in its commented blocks, and they load', () => {
    const blocks = commentedAgents();
    expect(blocks.map((b) => b.title)).toEqual([
      'skagents/v1, kind: Chat (stateless; one agent)',
      'skagents/v1, kind: Sequential (stateless; tasks run in task_no order)',
      'skagents/v2alpha1 (stateless; body fixed to BaseMultiModalInput)',
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'ta-example-'));
    blocks.forEach((b, i) => writeFileSync(join(dir, `block-${i}.yaml`), b.yaml));
    const agents = loadAgentConfigs(dir);
    expect(agents.map((a) => [a.prefix, a.module, a.kind, a.inputType])).toEqual([
      ['/ExampleChat/1.0', 'v1', 'Chat', 'BaseMultiModalInputWithUserContext'],
      ['/ExamplePlanner/0.1', 'v1', 'Sequential', 'BaseInputWithUserContext'],
      ['/ExampleV2/0.1', 'v2', 'Chat', 'BaseMultiModalInput'],
    ]);
    expect(agents[1]!.sequential!.tasks.map((t) => `${t.task_no}:${t.name}:${t.agent}`)).toEqual(['1:plan:planner', '2:answer:writer']);
  });

  // A field added to the schema without an example here fails this test.
  it.each(
    [
      AgentFileConfig,
      MetadataConfig,
      SkillConfig,
      SpecConfig,
      AgentSpecConfig,
      SequentialTaskConfig,
      McpServerConfig,
      ToolGovernanceOverride,
      GovernanceConfig,
      ToolPolicy,
      ConcurrencyConfig,
      WebhookConfig,
    ].map((cls) => [cls.name, cls] as const),
  )('shows every field of %s', (_name, cls) => {
    const fields = [
      ...new Set(
        getMetadataStorage()
          .getTargetValidationMetadatas(cls, '', true, false)
          .map((m) => m.propertyName),
      ),
    ];
    expect(fields.length).toBeGreaterThan(0);
    const missing = fields.filter((f) => !new RegExp(`^[#\\s-]*${f}:`, 'm').test(text));
    expect(missing).toEqual([]);
  });

  describe('served as its header says (TA_AUTH_MODE=dev, no provider)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ configPath: EXAMPLE, env: { TA_LOG_LEVEL: 'silent' } });
    });
    afterAll(() => t?.close());

    it('answers its health route', async () => {
      expect((await request(`${t.url}/ExampleAgent/0.1/health`)).status).toBe(200);
    });
  });
});
