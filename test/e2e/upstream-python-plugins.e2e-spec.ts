import { execFileSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { ConfigError } from '../../src/agents/config/config-error';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { startFakeModelApp } from '../support/fake-model-app';
import { reply } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { writeAgentDir } from '../support/test-app';

/**
 * Upstream plugins are Python classes (custom_plugins.py beside the config, or the file
 * TA_PLUGIN_MODULE names). The Python plugin host serves them as they are (test/e2e/python-plugins.e2e-spec.ts
 * has the contract and the faults); here, agents in upstream's demo shapes boot and answer through
 * them. With TA_PYTHON_PLUGINS=off the boot refuses such an agent with a message that says so and
 * names the file and the class, instead of "not found" or a JavaScript parse error of the .py.
 */
const PY = resolve(__dirname, '../fixtures/upstream/python-plugins');
const PROVIDER = { TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'never-used' };

async function bootProblems(configPath: string, env: Record<string, string> = {}): Promise<string[]> {
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  try {
    const { app } = await createApp({
      env: loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent', TA_PYTHON_PLUGINS: 'off', ...PROVIDER, ...env }),
      configPath,
      logDestination: sink,
    });
    await app.init();
    await app.close();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error(`${configPath} booted`);
}

const refusal = (config: string, field: string, cls: string, file: string) =>
  `${config}: ${field}: plugin "${cls}" is the Python class ${cls} in ${file}: Python plugins are turned off (TA_PYTHON_PLUGINS=off). ` +
  `Port it to a TypeScript or JavaScript plugin named "${cls}" (in custom_plugins.ts beside the config, or in TA_PLUGIN_MODULE; see docs/tools.md)`;

describe('with TA_PYTHON_PLUGINS=off, Python plugins are refused at boot, naming the file and the class', () => {
  it('custom_plugins.py beside the config (demo 10_chat_plugins)', async () => {
    const dir = join(PY, 'chat-plugins');
    expect(await bootProblems(join(dir, 'config.yaml'))).toEqual([
      refusal(join(dir, 'config.yaml'), 'spec.agent.plugins[0]', 'WeatherPlugin', join(dir, 'custom_plugins.py')),
    ]);
  });

  it('TA_PLUGIN_MODULE naming a .py (demo 11_hitl): the file is never loaded as JavaScript', async () => {
    const dir = join(PY, 'hitl');
    const problems = await bootProblems(join(dir, 'config.yaml'), { TA_PLUGIN_MODULE: join(dir, 'math_plugins.py') });
    expect(problems).toEqual([refusal(join(dir, 'config.yaml'), 'spec.agent.plugins[0]', 'sensitive_plugin', join(dir, 'math_plugins.py'))]);
    expect(problems.join('\n')).not.toMatch(/SyntaxError|Unexpected|failed to load/);
  });

  it('a class of a shipped demo plugin name is still refused: the demo never stands in for the operator’s Python plugin', async () => {
    const dir = writeAgentDir({
      'config.yaml': `apiVersion: tealagents/v1alpha1
name: Calc
version: 0.1
spec:
  agent:
    name: default
    model: local/echo
    plugins: [Calculator]
`,
    });
    writeFileSync(join(dir, 'custom_plugins.py'), 'class Calculator(BasePlugin):\n    pass\n');
    expect(await bootProblems(dir)).toEqual([refusal(join(dir, 'config.yaml'), 'spec.agent.plugins[0]', 'Calculator', join(dir, 'custom_plugins.py'))]);
  });

  it('a .py that does not define the class: "not found", naming the .py as scanned, not loaded', async () => {
    const dir = join(PY, 'hitl');
    const elsewhere = writeAgentDir({});
    cpSync(join(dir, 'config.yaml'), join(elsewhere, 'config.yaml'));
    writeFileSync(join(elsewhere, 'other.py'), 'class SomethingElse:\n    pass\n');
    const [problem, ...rest] = await bootProblems(elsewhere, { TA_PLUGIN_MODULE: join(elsewhere, 'other.py') });
    expect(rest).toEqual([]);
    expect(problem).toContain(`${join(elsewhere, 'config.yaml')}: spec.agent.plugins[0]: plugin "sensitive_plugin" not found (looked in `);
    expect(problem).toContain(`; Python modules scanned for a class of that name: ${join(elsewhere, 'other.py')}`);
  });
});

const hasPydantic = (() => {
  try {
    execFileSync(process.env.TA_PYTHON ?? 'python3', ['-c', 'import pydantic'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A stateless v1 turn of a weather bot whose model calls WeatherPlugin-get_temperature once; gives the tool's result as the model saw it. */
async function weatherTurn(configDir: string, agent: string): Promise<unknown> {
  const f = await startFakeModelApp({ configPath: configDir });
  try {
    f.llm.script(
      reply.toolCalls([{ id: 'call_1', name: 'WeatherPlugin-get_temperature', arguments: JSON.stringify({ city: 'Oslo' }) }]),
      reply.text('Between 8 and 17 degrees.'),
    );
    const res = await postJson(`${f.t.url}/${agent}/0.1`, {
      chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'How warm is Oslo today?' }] }],
    });
    expect(res.status).toBe(200);
    expect(res.body.output_raw).toBe('Between 8 and 17 degrees.');
    expect(f.llm.requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['WeatherPlugin-get_temperature']);
    return JSON.parse(f.llm.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool').content);
  } finally {
    await f.close();
  }
}

describe("upstream's demo agents with Python plugins boot and answer through the plugin host", () => {
  // Demo 10's plugin returns a pydantic model, as upstream's do: the interpreter needs pydantic (skipped, and reported so, without it).
  (hasPydantic ? it : it.skip)('custom_plugins.py beside the config (demo 10_chat_plugins): a stateless v1 turn calls the Python tool', async () => {
    expect(await weatherTurn(join(PY, 'chat-plugins'), 'WeatherBot')).toEqual({ low: 8, high: 17 });
  });

  it('TA_PLUGIN_MODULE naming a .py (demo 11_hitl): a v3 turn calls the Python tool', async () => {
    const dir = join(PY, 'hitl');
    const f = await startFakeModelApp({ configPath: join(dir, 'config.yaml'), env: { TA_PLUGIN_MODULE: join(dir, 'math_plugins.py') } });
    try {
      f.llm.script(reply.toolCalls([{ id: 'call_1', name: 'sensitive_plugin-record_solution', arguments: '{}' }]), reply.text('Recorded: 4.'));
      const res = await postJson(`${f.t.url}/MathHelper/0.1`, { items: [{ content_type: 'text', content: '2 + 2?' }] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'Completed', content: { output: 'Recorded: 4.' } });
      const toolResult = f.llm.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
      expect(toolResult.content).toBe('recorded');
    } finally {
      await f.close();
    }
  });
});

describe('a plugin ported to TypeScript beside its Python original is served', () => {
  it('custom_plugins.ts wins over custom_plugins.py, and its tool runs', async () => {
    expect(await weatherTurn(join(PY, 'ported'), 'PortedWeatherBot')).toEqual({ city: 'Oslo', low: 8, high: 17 });
  });
});
