/**
 * The Python plugin host (plugin-host/teal_plugin_host.py, docs/python-plugins.md) driven by the
 * official MCP client over stdio, with plugins written here in upstream's format
 * (test/fixtures/python-plugins). Invariants: each `@kernel_function` of a named class is a tool
 * `{Plugin}-{function}` with a JSON Schema from its signature; sync and async functions answer
 * with their value (a string as is, anything else as JSON); the plugin sees the Authorization sent
 * in `_meta.authorization`, and what it collects comes back in `_meta.extra_data`; an exception is
 * an `isError` result naming it; the host uses the real semantic_kernel and sk_agents when the
 * interpreter has them; a module that fails to import stops the host with one line on stderr.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';

const HOST = join(__dirname, '..', '..', 'plugin-host', 'teal_plugin_host.py');
const FIXTURES = join(__dirname, '..', 'fixtures', 'python-plugins');
const PLUGINS = join(FIXTURES, 'custom_plugins.py');
/** python3's own path: a version manager's shim (pyenv) costs a few hundred ms per start, and this file starts many. */
const PYTHON = execFileSync(process.env.TA_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();

const hasPydantic = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import pydantic'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

interface Host {
  client: Client;
  stderr: () => string;
}

const hosts: Client[] = [];

/** A host of `module`'s `plugins`, connected; `env` is added to the SDK's default environment. */
async function startHost(module: string, plugins: string, env: Record<string, string> = {}): Promise<Host> {
  const transport = new StdioClientTransport({
    command: PYTHON,
    args: [HOST, '--module', module, '--plugins', plugins],
    env: { ...getDefaultEnvironment(), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'python-plugin-host-e2e', version: '1.0.0' });
  await client.connect(transport);
  hosts.push(client);
  return { client, stderr: () => stderr };
}

/** The host run to its exit, without a client (for the hosts that must not start). */
function runHost(module: string, plugins: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(PYTHON, [HOST, '--module', module, '--plugins', plugins], { timeout: 8_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

/** Resolves once `stderr()` contains `line` (stderr is another pipe: it may trail the answer on stdout). */
async function stderrShows(host: Host, line: string, timeoutMs = 3_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (!host.stderr().includes(line) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return host.stderr();
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('');

const TOOLS = [
  {
    name: 'WeatherPlugin-alerts',
    description: 'The weather alerts of a region',
    inputSchema: {
      type: 'object',
      properties: {
        region: { type: 'string', description: "The region's name" },
        labels: { type: ['object', 'null'], additionalProperties: { type: 'string' }, description: 'Labels to attach to each alert' },
      },
      required: ['region'],
    },
  },
  {
    name: 'WeatherPlugin-average',
    description: 'The average of temperature readings',
    inputSchema: {
      type: 'object',
      properties: {
        readings: { type: 'array', items: { type: 'number' }, description: 'The readings' },
        precise: { type: 'boolean', default: false },
      },
      required: ['readings'],
    },
  },
  {
    name: 'WeatherPlugin-get_forecast',
    description: 'Get the forecast for a city',
    inputSchema: {
      type: 'object',
      properties: {
        city: { type: 'string', description: "The city's name" },
        days: { type: 'integer', description: 'How many days ahead', default: 1 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'], description: 'The temperature unit', default: 'celsius' },
        country: { type: ['string', 'null'], description: "The country code, when the city's name is ambiguous" },
      },
      required: ['city'],
    },
  },
  {
    name: 'AccountPlugin-delete_account',
    description: "Delete the user's account",
    inputSchema: { type: 'object', properties: { account_id: { type: 'string', description: "The account's id" } }, required: ['account_id'] },
  },
  {
    name: 'AccountPlugin-remember_city',
    description: "Remember the user's city for the next turns",
    inputSchema: { type: 'object', properties: { city: { type: 'string', description: "The user's city" } }, required: ['city'] },
  },
  {
    name: 'AccountPlugin-whoami',
    description: 'Who is calling: the Authorization the agent forwarded',
    inputSchema: { type: 'object', properties: {} },
  },
];

const REMEMBERED = {
  items: [
    { key: 'set-context', value: 'User Location:Oslo' },
    { key: 'audit', value: 'city set to Oslo' },
  ],
};

describe('the Python plugin host over MCP stdio (upstream plugins, stand-ins for semantic_kernel and sk_agents)', () => {
  let host: Host;
  const call = async (name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>) =>
    (await host.client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;

  beforeAll(async () => {
    host = await startHost(PLUGINS, 'WeatherPlugin,AccountPlugin');
  });
  afterAll(async () => {
    await Promise.all(hosts.map((c) => c.close().catch(() => undefined)));
  });

  it('lists each @kernel_function of the named classes as {Plugin}-{function}, with the JSON Schema of its signature', async () => {
    expect(host.client.getServerVersion()).toMatchObject({ name: 'teal-plugin-host' });
    expect(host.client.getServerCapabilities()).toEqual({ tools: {} });
    expect((await host.client.listTools()).tools).toEqual(TOOLS);
  });

  it('calls sync and async functions: a string as is, other values as JSON, arguments turned into their types', async () => {
    const forecast = await call('WeatherPlugin-get_forecast', { city: 'Oslo', days: 2, unit: 'fahrenheit', country: 'NO' });
    expect(forecast.isError).toBeFalsy();
    expect(text(forecast)).toBe('Oslo, NO in 2 day(s): 36 fahrenheit');
    expect(text(await call('WeatherPlugin-get_forecast', { city: 'Lisbon' }))).toBe('Lisbon in 1 day(s): 21 celsius');
    expect(await stderrShows(host, 'forecast asked for Lisbon')).toContain('forecast asked for Oslo\n'); // what plugins print goes to stderr
    expect(JSON.parse(text(await call('WeatherPlugin-average', { readings: [1, 2, 4] })))).toEqual({ count: 3, average: 2 });
    expect(JSON.parse(text(await call('WeatherPlugin-average', { readings: [1, 2, 4], precise: true })))).toEqual({ count: 3, average: 7 / 3 });
    const alerts = await call('WeatherPlugin-alerts', { region: 'North', labels: { b: '2', a: '1' } });
    expect(JSON.parse(text(alerts))).toEqual(['storm over North [a=1] [b=2]', 'wind over North [a=1] [b=2]']);
    expect(alerts._meta).toBeUndefined();
  });

  it('instantiates the plugin per call with the Authorization from _meta.authorization (None without it)', async () => {
    const [a, b, none] = await Promise.all([
      call('AccountPlugin-whoami', {}, { authorization: 'Bearer token-a' }),
      call('AccountPlugin-whoami', {}, { authorization: 'Bearer token-b' }),
      call('AccountPlugin-whoami'),
    ]);
    expect([text(a), text(b), text(none)]).toEqual(['authorization: Bearer token-a', 'authorization: Bearer token-b', 'authorization: None']);
  });

  it("returns what the plugin put in its extra_data_collector in _meta.extra_data (upstream's ExtraData)", async () => {
    const result = await call('AccountPlugin-remember_city', { city: 'Oslo' });
    expect(text(result)).toBe('I will remember Oslo');
    expect(result._meta).toEqual({ extra_data: REMEMBERED });
  });

  it('a raising function is an isError result naming the exception; so is an argument its type refuses', async () => {
    const raised = await call('AccountPlugin-delete_account', { account_id: 'acc-7' });
    expect(raised).toMatchObject({ isError: true, content: [{ type: 'text', text: 'PermissionError: account acc-7 is locked' }] });
    const refused = await call('WeatherPlugin-get_forecast', { city: 'Oslo', unit: 'kelvin' });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe("TypeError: argument unit: 'kelvin' is not one of ['celsius', 'fahrenheit']");
    expect(text(await call('WeatherPlugin-get_forecast', { days: 2 }))).toBe('TypeError: missing required argument: city');
    const logged = 'AccountPlugin-delete_account raised PermissionError: account acc-7 is locked (account_plugins.py, line 22)';
    expect(await stderrShows(host, logged)).toContain(logged);
  });

  it('an unknown tool is a JSON-RPC error (invalid params); the host keeps serving', async () => {
    const error = await call('WeatherPlugin-not_a_tool').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: ErrorCode.InvalidParams, message: expect.stringContaining('Unknown tool: WeatherPlugin-not_a_tool') });
    await expect(host.client.ping()).resolves.toEqual({});
  });

  it('uses semantic_kernel and sk_agents when the interpreter has them (here: fakes on PYTHONPATH), not its stand-ins', async () => {
    const real = await startHost(PLUGINS, 'WeatherPlugin,AccountPlugin', { PYTHONPATH: join(FIXTURES, 'installed') });
    expect((await real.client.listTools()).tools).toEqual(TOOLS);
    const result = (await real.client.callTool({ name: 'AccountPlugin-remember_city', arguments: { city: 'Oslo' } })) as CallToolResult;
    expect(result._meta).toEqual({ extra_data: REMEMBERED });
    expect(await stderrShows(real, 'installed sk_agents imported')).toContain('installed semantic_kernel imported\ninstalled sk_agents imported\n');
  });

  (hasPydantic ? it : it.skip)('a pydantic model parameter: its model_json_schema(), the argument validated into the model', async () => {
    const shipping = await startHost(join(FIXTURES, 'pydantic_plugins.py'), 'ShippingPlugin');
    const [tool] = (await shipping.client.listTools()).tools;
    expect(tool!.inputSchema).toEqual({
      type: 'object',
      properties: {
        to: {
          title: 'Address',
          type: 'object',
          description: 'Where to ship',
          properties: { street: { title: 'Street', type: 'string' }, city: { title: 'City', type: 'string', description: 'The city' } },
          required: ['street', 'city'],
        },
      },
      required: ['to'],
    });
    const label = (await shipping.client.callTool({ name: 'ShippingPlugin-label', arguments: { to: { street: 'main st', city: 'oslo' } } })) as CallToolResult;
    expect(JSON.parse(text(label))).toEqual({ street: 'MAIN ST', city: 'OSLO' });
  });

  it('a module that fails to import: exit 1, nothing on stdout, one line on stderr naming the file and the Python error', async () => {
    const broken = join(FIXTURES, 'broken', 'custom_plugins.py');
    const { code, stdout, stderr } = await runHost(broken, 'WeatherPlugin');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `teal-plugin-host: cannot import ${broken}: ModuleNotFoundError: No module named 'forecast_service_client' (custom_plugins.py, line 6)\n`,
    );
  });

  it('a plugin the module lacks: exit 1, one line naming the file and the class', async () => {
    const { code, stderr } = await runHost(PLUGINS, 'WeatherPlugin,MissingPlugin');
    expect(code).toBe(1);
    expect(stderr).toBe(`teal-plugin-host: ${PLUGINS}: plugin MissingPlugin not found (no class of that name in the module)\n`);
  });
});
