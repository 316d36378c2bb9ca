import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ConfigError } from '../../src/agents/config/config-error';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { ToolExecutor } from '../../src/tools/tool-executor';
import type { Tool } from '../../src/tools/tool.port';
import { toolBootProblems, toolsFor } from '../support/agent-tools';
import { OpenApiTestApi, startOpenApiTestApi, writeRemoteCatalog } from '../support/openapi-api.server';
import { writeAgentDir } from '../support/test-app';

const alice = { tenantId: 't1', ownerId: 'alice' };
const executor = new ToolExecutor({ timeoutMs: 2_000, maxRetries: 2, retryBaseMs: 5 });

function agentYaml(spec: string, extra = ''): string {
  return `apiVersion: tealagents/v1alpha1
name: Tooly
version: 1
description: tools test
spec:
  agent:
    name: default
    model: local/echo
${spec
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
${extra}`;
}

let n = 0;
const call = (name: string, args: unknown = {}) => ({ id: `c${++n}`, name, arguments: JSON.stringify(args) });

describe('plugins', () => {
  it('finds a JavaScript plugin next to the config (custom_plugins.js), with caller and token only when it asks', async () => {
    const dir = writeAgentDir({ 'a.yaml': agentYaml('plugins: [Greeter, Secretive]') });
    writeFileSync(
      join(dir, 'custom_plugins.js'),
      `exports.plugins = [
        { name: 'Greeter', forward_token: true, tools: [{ name: 'hello', description: 'greets', risk: 'read_only',
          parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          handler: (args, ctx) => ({ text: 'hello ' + args.name, user: ctx.principal.ownerId, token: ctx.bearerToken ?? null, signal: ctx.signal instanceof AbortSignal }) }] },
        { name: 'Secretive', tools: [{ name: 'peek', description: 'token?', handler: (args, ctx) => String(ctx.bearerToken) }] },
      ];`,
    );
    const { tools } = await toolsFor(dir);
    expect([...tools.keys()]).toEqual(['Greeter-hello', 'Secretive-peek']);
    expect(tools.get('Secretive-peek')?.risk).toBe('write_high_risk'); // undeclared: fail closed
    const [hello, peek] = await executor.executeAll(tools, [call('Greeter-hello', { name: 'Ada' }), call('Secretive-peek')], {
      principal: alice,
      bearerToken: 'tok',
    });
    expect(JSON.parse(hello!.result)).toEqual({ text: 'hello Ada', user: 'alice', token: 'tok', signal: true });
    expect(peek!.result).toBe('undefined');
  });

  it('finds a TypeScript plugin through TA_PLUGIN_MODULE, and the shipped demos/plugins ones', async () => {
    const moduleDir = writeAgentDir({});
    writeFileSync(
      join(moduleDir, 'mine.ts'),
      `interface Args { word: string }
       export const plugins = [{ name: 'Shout', tools: [{ name: 'shout', description: 'upper', risk: 'read_only' as const,
         parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
         handler: (a: Args) => a.word.toUpperCase() }] }];`,
    );
    const dir = writeAgentDir({ 'a.yaml': agentYaml('plugins: [Shout, Calculator, Weather]') });
    const { tools } = await toolsFor(dir, { pluginModule: moduleDir });
    expect([...tools.keys()]).toEqual(['Shout-shout', 'Calculator-add', 'Calculator-multiply', 'Calculator-divide', 'Weather-get_forecast', 'Weather-whoami']);
    const results = await executor.executeAll(
      tools,
      [call('Shout-shout', { word: 'hi' }), call('Calculator-multiply', { a: 6, b: 7 }), call('Calculator-divide', { a: 1, b: 0 })],
      { principal: alice },
    );
    expect(results.map((r) => r.result)).toEqual(['HI', '42', 'Error: Calculator-divide failed: cannot divide by zero']);
  });

  it('fails the boot for a plugin that does not exist, naming the file, the field and where it looked', async () => {
    const dir = writeAgentDir({ 'a.yaml': agentYaml('plugins: [Calculator, NoSuchPlugin]') });
    const problems = await toolBootProblems(dir);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(`${join(dir, 'a.yaml')}: spec.agent.plugins[1]: plugin "NoSuchPlugin" not found (looked in `);
    expect(problems[0]).toContain('demos/plugins');
  });

  it('fails the boot for a broken plugin definition and a module that does not load', async () => {
    const dir = writeAgentDir({ 'a.yaml': agentYaml('plugins: [Broken, Missing]') });
    writeFileSync(join(dir, 'custom_plugins.js'), `exports.plugins = [{ name: 'Broken', tools: [{ name: 'x', parameters: { type: 'string' } }] }];`);
    mkdirSync(join(dir, 'plugins'));
    writeFileSync(join(dir, 'plugins', 'broken.js'), 'not js at all (');
    const problems = await toolBootProblems(dir);
    expect(problems.some((p) => /plugins\[0\]: .*custom_plugins\.js: plugin Broken tools\[0\] \(x\): description is required/.test(p))).toBe(true);
    expect(problems.some((p) => /handler must be a function/.test(p))).toBe(true);
    expect(problems.some((p) => /parameters must be a JSON schema with type "object"/.test(p))).toBe(true);
    const missing = problems.find((p) => /plugins\[1\]: plugin "Missing" not found/.test(p));
    expect(missing).toMatch(/modules that failed to load: .*plugins\/broken\.js: /);
  });

  it("reads governance from upstream's plugin catalog JSON (TA_PLUGIN_CATALOG_FILE), under spec.governance", async () => {
    const dir = writeAgentDir({
      'a.yaml': agentYaml('plugins: [Calculator]', 'governance:\n    tools:\n      Calculator-add: { requires_hitl: false }\n'.replace(/^/gm, '  ')),
    });
    const catalog = join(dir, 'catalog.json');
    writeFileSync(
      catalog,
      JSON.stringify({
        plugins: [
          {
            plugin_id: 'Calculator',
            tools: [
              { tool_id: 'Calculator-add', governance: { requires_hitl: true, cost: 'low', data_sensitivity: 'public' } },
              { tool_id: 'Calculator-divide', governance: { requires_hitl: true, risk: 'write_low_risk' } },
            ],
          },
        ],
      }),
    );
    const { tools } = await toolsFor(dir, { pluginCatalogFile: catalog });
    expect(tools.get('Calculator-divide')).toMatchObject({ risk: 'write_low_risk', requiresHitl: true });
    expect(tools.get('Calculator-add')).toMatchObject({ risk: 'read_only', requiresHitl: false });
  });

  it('stops the real boot (createApp) for a missing plugin, before anything listens', async () => {
    const dir = writeAgentDir({ 'a.yaml': agentYaml('plugins: [Nowhere]') });
    const err = await createApp({ env: loadEnvConfig({ TA_AUTH_MODE: 'dev' }), configPath: dir, logDestination: new PassThrough() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain('spec.agent.plugins[0]: plugin "Nowhere" not found');
  });

  it('applies spec.governance.tools over the plugin declaration', async () => {
    const dir = writeAgentDir({
      'a.yaml': agentYaml(
        'plugins: [Calculator]',
        'governance:\n    tools:\n      Calculator-divide: { risk: write_low_risk, requires_hitl: true }\n'.replace(/^/gm, '  '),
      ),
    });
    const { tools } = await toolsFor(dir);
    expect(tools.get('Calculator-divide')).toMatchObject({ risk: 'write_low_risk', requiresHitl: true });
    expect(tools.get('Calculator-add')).toMatchObject({ risk: 'read_only' });
  });
});

describe('remote plugins (OpenAPI) against a real local HTTP API', () => {
  let api: OpenApiTestApi;
  let tools: Map<string, Tool>;
  beforeAll(async () => {
    api = await startOpenApiTestApi();
    const catalog = writeRemoteCatalog([{ plugin_name: 'inventory', document: api.document, forward_token: true }]);
    const dir = writeAgentDir({ 'a.yaml': agentYaml('remote_plugins: [inventory]') });
    ({ tools } = await toolsFor(dir, { remotePluginPath: catalog }));
  });
  afterAll(() => api.stop());

  it('turns each operation into a tool with parameters from the document', () => {
    expect([...tools.keys()]).toEqual(['inventory-get_item', 'inventory-search_items', 'inventory-add_item', 'inventory-whoami']);
    expect(tools.get('inventory-get_item')).toMatchObject({ risk: 'read_only', parameters: { required: ['id'] } });
    expect(tools.get('inventory-add_item')).toMatchObject({ risk: 'write_high_risk', parameters: { required: ['body'] } });
  });

  it('calls the API with path, query and body arguments', async () => {
    const results = await executor.executeAll(
      tools,
      [call('inventory-get_item', { id: '1' }), call('inventory-search_items', { q: 'sa' }), call('inventory-add_item', { body: { name: 'drill', stock: 2 } })],
      { principal: alice },
    );
    expect(results.map((r) => JSON.parse(r.result))).toEqual([
      { id: '1', name: 'hammer', stock: 3 },
      [{ id: '2', name: 'saw', stock: 0 }],
      { id: '3', name: 'drill', stock: 2 },
    ]);
    expect(api.requests.slice(-3).map((r) => [r.method, r.path, r.query, r.body])).toEqual([
      ['GET', '/items/1', {}, undefined],
      ['GET', '/items', { q: 'sa' }, undefined],
      ['POST', '/items', {}, { name: 'drill', stock: 2 }],
    ]);
  });

  it('checks the body against the document before calling, and reports HTTP errors as error results', async () => {
    const before = api.requests.length;
    const [bad] = await executor.executeAll(tools, [call('inventory-add_item', { body: { name: 'x', stock: -1 } })], { principal: alice });
    expect(bad!.result).toMatch(/invalid arguments for inventory-add_item: .*arguments\/body\/stock must be >= 0/);
    expect(api.requests.length).toBe(before);
    const [missing] = await executor.executeAll(tools, [call('inventory-get_item', { id: '99' })], { principal: alice });
    expect(missing).toMatchObject({ outcome: 'error', attempts: 1 });
    expect(missing!.result).toContain('HTTP 404 from GET /items/{id}: {"error":"no item 99"}');
  });

  it('refuses path arguments that would leave their segment: the API receives nothing, the model gets an error result', async () => {
    const before = api.requests.length;
    const escaping = ['..', '.', '%2e%2e', ''];
    const results = await executor.executeAll(
      tools,
      escaping.map((id) => call('inventory-get_item', { id })),
      { principal: alice },
    );
    expect(api.requests.length).toBe(before);
    for (const r of results) {
      expect(r).toMatchObject({ outcome: 'error', attempts: 1 });
      expect(r.result).toMatch(/path parameter "id" must not be empty, "\." or "\.\."/);
    }
    // Other characters are encoded into the one segment, never a path, query or fragment of their own.
    await executor.executeAll(tools, [call('inventory-get_item', { id: '../whoami?x=1#f' }), call('inventory-get_item', { id: '/' })], { principal: alice });
    expect(api.requests.slice(-2).map((r) => [r.path, r.query])).toEqual([
      ['/items/..%2Fwhoami%3Fx%3D1%23f', {}],
      ['/items/%2F', {}],
    ]);
  });

  it('retries a 503 with backoff, then succeeds', async () => {
    api.failNext(2);
    const [r] = await executor.executeAll(tools, [call('inventory-get_item', { id: '2' })], { principal: alice });
    expect(r).toMatchObject({ outcome: 'ok', attempts: 3 });
  });

  it('forwards the caller token only because the catalog entry says so', async () => {
    const [r] = await executor.executeAll(tools, [call('inventory-whoami')], { principal: alice, bearerToken: 'tok-1' });
    expect(JSON.parse(r!.result)).toEqual({ authorization: 'Bearer tok-1' });
  });

  it('fails the boot for a remote plugin missing from the catalog, or without a catalog', async () => {
    const dir = writeAgentDir({ 'a.yaml': agentYaml('remote_plugins: [inventory, weather]') });
    const catalog = writeRemoteCatalog([{ plugin_name: 'inventory', document: api.document }]);
    expect(await toolBootProblems(dir, { remotePluginPath: catalog })).toEqual([
      `${join(dir, 'a.yaml')}: spec.agent.remote_plugins[1]: remote plugin "weather" is not in ${catalog}`,
    ]);
    expect((await toolBootProblems(dir))[0]).toMatch(/remote_plugins\[0\]: "inventory" needs a remote plugin catalog: set TA_REMOTE_PLUGIN_PATH/);
  });
});
