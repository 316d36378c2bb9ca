/**
 * Upstream's Python plugins served by the server through the plugin host (plugin-host/, one child
 * process per plugin module, MCP over stdio): the toolset an agent gets at boot, upstream's plugin
 * contract per call, the faults a plugin can cause (an exception, a hang past the timeout, a host
 * that freezes or kills itself) and the bound on calls in flight, boot refusals that name the file,
 * the class and the Python error; then whole turns over HTTP (an approval that runs the tool once,
 * extra data in the answer, plugin output in the logs with the request's ids).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ToolsConfig } from '../../src/config/env.config';
import { ToolExecutor } from '../../src/tools/tool-executor';
import { ToolRegistry } from '../../src/tools/tool-registry';
import type { Tool } from '../../src/tools/tool.port';
import { toolBootProblems, toolsFor as buildTools } from '../support/agent-tools';
import { startFakeModelApp, FakeModelApp } from '../support/fake-model-app';
import { reply } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { writeAgentDir } from '../support/test-app';
import { v3Client } from '../support/v3-client';

jest.setTimeout(30_000);

const FIXTURES = resolve(__dirname, '../fixtures/python-plugins');
const alice = { tenantId: 't1', ownerId: 'alice' };
/** The interpreter's own path: a version manager's `python3` shim (pyenv) costs a few hundred ms per start. */
const INTERPRETER = execFileSync(process.env.TA_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
const PYTHON = { interpreter: INTERPRETER, enabled: true, concurrency: 8 };

function agentYaml(plugins: string[], extra = ''): string {
  return `apiVersion: tealagents/v1alpha1
name: Py
version: 1
description: Python plugins
spec:
${extra}  agent:
    name: default
    model: gpt-test
    system_prompt: Use the tools.
    plugins: [${plugins.join(', ')}]
`;
}

/** An agent directory with the fixture modules beside its config (custom_plugins.py and its siblings). */
function agentDir(plugins: string[], extra = ''): string {
  const dir = writeAgentDir({ 'agent.yaml': agentYaml(plugins, extra) });
  for (const f of ['custom_plugins.py', 'account_plugins.py', 'forecasts.py']) cpSync(join(FIXTURES, f), join(dir, f));
  return dir;
}

const registries: ToolRegistry[] = [];
afterAll(() => Promise.all(registries.map((r) => r.close())));

/** The toolset of the agent in `dir`, with Python plugins on; its registry (and hosts) closed after the file. */
async function toolsFor(dir: string, config: Partial<ToolsConfig> = {}): Promise<{ tools: Map<string, Tool>; registry: ToolRegistry }> {
  const built = await buildTools(dir, { python: PYTHON, ...config });
  registries.push(built.registry);
  return built;
}

const bootProblems = (dir: string, config: Partial<ToolsConfig> = {}) => toolBootProblems(dir, { python: PYTHON, ...config });

let n = 0;
const call = (name: string, args: unknown = {}) => ({ id: `c${++n}`, name, arguments: JSON.stringify(args) });
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('an agent naming classes of custom_plugins.py', () => {
  const executor = new ToolExecutor({ timeoutMs: 10_000, maxRetries: 2, retryBaseMs: 5 });
  let tools: Map<string, Tool>;
  beforeAll(async () => ({ tools } = await toolsFor(agentDir(['WeatherPlugin', 'AccountPlugin']))));

  it('gets each @kernel_function as {Plugin}-{function}, with the schema of its signature and the defaults of a plugin tool', () => {
    expect([...tools.keys()].sort()).toEqual([
      'AccountPlugin-delete_account',
      'AccountPlugin-remember_city',
      'AccountPlugin-whoami',
      'WeatherPlugin-alerts',
      'WeatherPlugin-average',
      'WeatherPlugin-get_forecast',
    ]);
    const forecast = tools.get('WeatherPlugin-get_forecast')!;
    expect(forecast).toMatchObject({ description: 'Get the forecast for a city', risk: 'write_high_risk', idempotent: false, source: 'python:WeatherPlugin' });
    expect(forecast.parameters).toMatchObject({
      type: 'object',
      required: ['city'],
      properties: {
        city: { type: 'string', description: "The city's name" },
        days: { type: 'integer', default: 1 },
        unit: { enum: ['celsius', 'fahrenheit'] },
      },
    });
  });

  it('runs sync and async functions with typed arguments: strings as they are, other values as JSON', async () => {
    const [forecast, average, alerts] = await executor.executeAll(
      tools,
      [
        call('WeatherPlugin-get_forecast', { city: 'Oslo', days: 2, unit: 'fahrenheit' }),
        call('WeatherPlugin-average', { readings: [1, 2, 4], precise: true }),
        call('WeatherPlugin-alerts', { region: 'North', labels: { level: 'red' } }),
      ],
      { principal: alice },
    );
    expect(forecast).toMatchObject({ outcome: 'ok', result: 'Oslo in 2 day(s): 36 fahrenheit' });
    expect(JSON.parse(average!.result)).toEqual({ count: 3, average: 7 / 3 });
    expect(JSON.parse(alerts!.result)).toEqual(['storm over North [level=red]', 'wind over North [level=red]']);
  });

  it("instantiates the class per call with the caller's Authorization header (None without a token)", async () => {
    const [withToken, without] = [
      await executor.execute(tools.get('AccountPlugin-whoami'), call('AccountPlugin-whoami'), { principal: alice, bearerToken: 'tok-1' }),
      await executor.execute(tools.get('AccountPlugin-whoami'), call('AccountPlugin-whoami'), { principal: alice }),
    ];
    expect(withToken.result).toBe('authorization: Bearer tok-1');
    expect(without.result).toBe('authorization: None');
  });

  it("returns what the plugin put in its extra_data_collector as the tool output's extra data", async () => {
    const out = await tools.get('AccountPlugin-remember_city')!.execute({ city: 'Lisbon' }, { principal: alice, signal: new AbortController().signal });
    expect(out).toEqual({
      content: 'I will remember Lisbon',
      isError: false,
      extraData: [
        { key: 'set-context', value: 'User Location:Lisbon' },
        { key: 'audit', value: 'city set to Lisbon' },
      ],
    });
  });

  it('a raising function is an error result naming the exception; the next call is served', async () => {
    const raised = await executor.execute(tools.get('AccountPlugin-delete_account'), call('AccountPlugin-delete_account', { account_id: '7' }), {
      principal: alice,
    });
    expect(raised).toMatchObject({ outcome: 'error', result: 'Error: PermissionError: account 7 is locked', attempts: 1 });
    const next = await executor.execute(tools.get('WeatherPlugin-get_forecast'), call('WeatherPlugin-get_forecast', { city: 'Lisbon' }), { principal: alice });
    expect(next.result).toBe('Lisbon in 1 day(s): 21 celsius');
  });
});

describe('faults of a plugin and of its host', () => {
  const executor = new ToolExecutor({ timeoutMs: 1_000, maxRetries: 2, retryBaseMs: 5 });
  let tools: Map<string, Tool>;
  const pid = async () => Number((await executor.execute(tools.get('FaultPlugin-pid'), call('FaultPlugin-pid'), { principal: alice })).result);
  beforeAll(
    async () =>
      ({ tools } = await toolsFor(writeAgentDir({ 'agent.yaml': agentYaml(['FaultPlugin']) }), { pluginModule: join(FIXTURES, 'faults_plugins.py') })),
  );

  it('a call that hangs past the tool timeout is an error result; the host, still answering, is kept', async () => {
    const before = await pid();
    const started = Date.now();
    const hung = await executor.execute(tools.get('FaultPlugin-hang'), call('FaultPlugin-hang', { seconds: 20 }), { principal: alice });
    expect(hung).toMatchObject({ outcome: 'error', attempts: 1 }); // not idempotent: never retried after a timeout
    expect(hung.result).toMatch(/timed out after 1000 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await pid()).toBe(before);
  });

  it('a host that freezes (its event loop blocked) is dropped after the timed-out call and restarted for the next', async () => {
    const before = await pid();
    const frozen = await executor.execute(tools.get('FaultPlugin-freeze'), call('FaultPlugin-freeze', { seconds: 60 }), { principal: alice });
    expect(frozen.result).toMatch(/timed out after 1000 ms/);
    await waitUntil(() => !isAlive(before), 10_000);
    const after = await pid();
    expect(after).not.toBe(before);
    expect(isAlive(after)).toBe(true);
  });

  it('a plugin that kills its process: the call is an error result at once, and the host is restarted for the next call', async () => {
    const before = await pid();
    const started = Date.now();
    const died = await executor.execute(tools.get('FaultPlugin-die'), call('FaultPlugin-die'), { principal: alice });
    expect(died.outcome).toBe('error');
    expect(died.result).toMatch(/^Error: FaultPlugin-die failed: /);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(isAlive(before)).toBe(false);
    const after = await pid();
    expect(after).not.toBe(before);
    const shout = await executor.execute(tools.get('FaultPlugin-shout'), call('FaultPlugin-shout', { text: 'back' }), { principal: alice });
    expect(shout.result).toBe('BACK');
  });

  it('bounds the calls in flight per host (TA_PYTHON_PLUGIN_CONCURRENCY); the others wait their turn', async () => {
    const dir = writeAgentDir({ 'agent.yaml': agentYaml(['FaultPlugin']) });
    const config = { pluginModule: join(FIXTURES, 'faults_plugins.py'), timeoutMs: 10_000 };
    const bounded = await toolsFor(dir, { ...config, python: { ...PYTHON, concurrency: 2 } });
    const free = await toolsFor(dir, { ...config, python: { ...PYTHON, concurrency: 8 } });
    const slow = new ToolExecutor({ timeoutMs: 10_000, maxRetries: 0, retryBaseMs: 5 });
    for (const { tools } of [bounded, free]) {
      const calls = Array.from({ length: 5 }, () => call('FaultPlugin-occupy', { seconds: 0.4 }));
      const done = await slow.executeAll(tools, calls, { principal: alice });
      expect(done.map((d) => d.result)).toEqual(Array(5).fill('done'));
    }
    const peak = async (tools: Map<string, Tool>) => (await slow.execute(tools.get('FaultPlugin-peak'), call('FaultPlugin-peak'), { principal: alice })).result;
    expect(await peak(bounded.tools)).toBe('2');
    expect(await peak(free.tools)).toBe('5');
  });

  it('closing the registry (shutdown, or a reload of the config) stops the host', async () => {
    const own = await toolsFor(writeAgentDir({ 'agent.yaml': agentYaml(['FaultPlugin']) }), { pluginModule: join(FIXTURES, 'faults_plugins.py') });
    const hostPid = Number((await executor.execute(own.tools.get('FaultPlugin-pid'), call('FaultPlugin-pid'), { principal: alice })).result);
    expect(isAlive(hostPid)).toBe(true);
    await own.registry.close();
    await waitUntil(() => !isAlive(hostPid), 5_000);
  });
});

describe('boot refusals', () => {
  it('a module that does not import: one problem naming the config field, the file and the Python error', async () => {
    const dir = writeAgentDir({ 'agent.yaml': agentYaml(['WeatherPlugin']) });
    cpSync(join(FIXTURES, 'broken', 'custom_plugins.py'), join(dir, 'custom_plugins.py'));
    const problems = await bootProblems(dir);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(`${join(dir, 'agent.yaml')}: spec.agent.plugins[0]: Python plugins WeatherPlugin of ${join(dir, 'custom_plugins.py')}: `);
    expect(problems[0]).toMatch(/ModuleNotFoundError: No module named 'forecast_service_client'/);
  });

  it('a class the scan finds but the imported module does not have as a class: the host names the file and the class', async () => {
    const dir = writeAgentDir({ 'agent.yaml': agentYaml(['GhostPlugin']) });
    writeFileSync(join(dir, 'custom_plugins.py'), 'class GhostPlugin:\n    pass\n\n\nGhostPlugin = 42\n');
    const problems = await bootProblems(dir);
    expect(problems).toEqual([
      expect.stringContaining(
        `Python plugins GhostPlugin of ${join(dir, 'custom_plugins.py')}: ${join(dir, 'custom_plugins.py')}: plugin GhostPlugin not found`,
      ),
    ]);
  });

  it('TA_PYTHON naming no interpreter: the boot says so, and how to proceed', async () => {
    const dir = agentDir(['WeatherPlugin', 'AccountPlugin']);
    const problems = await bootProblems(dir, { python: { ...PYTHON, interpreter: '/nonexistent/python3' } });
    expect(problems).toEqual([
      `${join(dir, 'agent.yaml')}: spec.agent.plugins[0], spec.agent.plugins[1]: Python plugins WeatherPlugin, AccountPlugin of ${join(dir, 'custom_plugins.py')}: ` +
        'the Python interpreter "/nonexistent/python3" (TA_PYTHON) was not found; install Python 3.10 or newer, point TA_PYTHON at one, or set TA_PYTHON_PLUGINS=off',
    ]);
  });

  it('TA_PYTHON_PLUGINS=off keeps the refusal, naming the file and the class', async () => {
    const dir = agentDir(['WeatherPlugin']);
    expect(await bootProblems(dir, { python: { ...PYTHON, enabled: false } })).toEqual([
      `${join(dir, 'agent.yaml')}: spec.agent.plugins[0]: plugin "WeatherPlugin" is the Python class WeatherPlugin in ${join(dir, 'custom_plugins.py')}: ` +
        'Python plugins are turned off (TA_PYTHON_PLUGINS=off). Port it to a TypeScript or JavaScript plugin named "WeatherPlugin" ' +
        '(in custom_plugins.ts beside the config, or in TA_PLUGIN_MODULE; see docs/tools.md)',
    ]);
  });
});

describe('whole turns over HTTP', () => {
  let f: FakeModelApp;
  let ledger: string;
  const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
  const ledgerLines = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : []);

  beforeAll(async () => {
    const dir = writeAgentDir({
      'agent.yaml': agentYaml(
        ['FaultPlugin', 'LedgerPlugin'],
        '  governance:\n    tools:\n      LedgerPlugin-transfer: {requires_hitl: true}\n      FaultPlugin-shout: {risk: read_only}\n',
      ),
    });
    cpSync(join(FIXTURES, 'faults_plugins.py'), join(dir, 'custom_plugins.py'));
    ledger = join(dir, 'ledger.txt');
    process.env.LEDGER_FILE = ledger; // the host's environment is the server's
    f = await startFakeModelApp({ configPath: dir, env: { TA_PYTHON: INTERPRETER } });
  });
  afterAll(async () => {
    await f?.close();
    delete process.env.LEDGER_FILE;
  });

  it('a requires_hitl Python tool pauses the turn, runs once after approval, and its extra data is in the answer', async () => {
    const api = v3Client(`${f.t.url}/Py/1`);
    f.llm.script(reply.toolCalls([tc('t1', 'LedgerPlugin-transfer', { amount: 5, to: 'bob' })]));
    const paused = await api.say('pay bob 5');
    expect(paused.body).toMatchObject({ status: 'Paused', content: { tool_calls: [{ name: 'LedgerPlugin-transfer' }] } });
    expect(ledgerLines()).toEqual([]);

    f.llm.script(reply.text('Paid.'));
    const resume = (body: unknown) => postJson(`${f.t.url}/Py/1/tealagents/v1alpha1/resume/${paused.body.request_id}`, body);
    const done = await resume({ action: 'approve' });
    expect(done.status).toBe(200);
    // The resume route answers the content itself, as upstream's.
    expect(done.body).toMatchObject({ status: 'Completed', output: 'Paid.', extra_data: { items: [{ key: 'ledger', value: '5 to bob' }] } });
    expect((await resume({ action: 'approve' })).status).toBe(409);
    expect(ledgerLines()).toEqual(['5 to bob']);
    const toolMessage = f.llm.requests[1]!.body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(toolMessage.content).toBe('transferred 5 to bob');
  });

  it('logs what a plugin prints with the ids of the request whose call printed it', async () => {
    const api = v3Client(`${f.t.url}/Py/1`);
    f.llm.script(reply.toolCalls([tc('s1', 'FaultPlugin-shout', { text: 'hey' })]), reply.text('HEY'));
    const res = await api.say('shout hey');
    expect(res.body.status).toBe('Completed');
    await waitUntil(() => f.t.logs().some((l) => l.msg === 'Python plugin stderr' && l.stderr === 'also on stderr: hey'), 5_000);
    const lines = f.t.logs().filter((l) => l.msg === 'Python plugin stderr' && String(l.stderr).endsWith('hey'));
    expect(lines.map((l) => l.stderr)).toEqual(['shouting hey', 'also on stderr: hey']);
    for (const l of lines) expect(l).toMatchObject({ task_id: res.body.task_id, request_id: res.body.request_id, agent: 'Py:1' });
  });
});

async function waitUntil(ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
