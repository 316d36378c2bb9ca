import { join } from 'node:path';
import { loadAgentConfigs } from './load-agent-configs';
import { configProblems, loadConfigFiles, writeConfigDir } from './config.fixtures';

const writeDir = writeConfigDir;
const load = loadConfigFiles;
const problems = configProblems;

/** A valid tealagents agent; `spec` and top-level lines can be appended or replaced. */
const v3 = (opts: { head?: string; agent?: string; spec?: string; version?: string; name?: string } = {}) =>
  [
    'apiVersion: tealagents/v1alpha1',
    `name: ${opts.name ?? 'Bot'}`,
    `version: ${opts.version ?? '0.1'}`,
    opts.head ?? '',
    'spec:',
    '  agent:',
    '    name: default',
    '    model: local/echo',
    opts.agent ?? '',
    opts.spec ?? '',
  ]
    .filter(Boolean)
    .join('\n') + '\n';

describe('loadAgentConfigs: what a valid file becomes', () => {
  it.each([
    ['0.1', '0.1'],
    ['1.0', '1.0'],
    ['1.10', '1.10'],
    ['2', '2'],
    ['"0.1"', '0.1'],
    ["'1.0'", '1.0'],
    ['v1', 'v1'],
    ['2024-05-13', '2024-05-13'],
  ])('keeps version %s as the string "%s" (the YAML source text, as Python str() does)', (yaml, version) => {
    const [agent] = load({ 'a.yaml': v3({ version: yaml }) });
    expect(agent!.version).toBe(version);
    expect(agent!.prefix).toBe(`/Bot/${version}`);
    expect(agent!.source).toBe(`Bot:${version}`);
  });

  it('takes the description from metadata, else description, else "{name} API"', () => {
    const agents = load({
      'a.yaml': v3({ name: 'A', head: 'description: top\nmetadata:\n  description: "  from metadata  "' }),
      'b.yaml': v3({ name: 'B', head: 'description: " top level "' }),
      'c.yaml': v3({ name: 'C', head: 'description: "   "' }),
      'd.yaml': v3({ name: 'D' }),
    });
    expect(agents.map((a) => a.description)).toEqual(['from metadata', 'top level', 'C API', 'D API']);
  });

  it('reads the name from service_name for skagents/v1 and from name for the others', () => {
    const agents = load({
      'v1.yaml':
        'apiVersion: skagents/v1\nkind: Chat\nname: Ignored\nservice_name: V1Bot\nversion: 0.1\ninput_type: BaseInput\nspec:\n  agent: {name: a, model: local/echo}\n',
      'v2.yaml': 'apiVersion: skagents/v2alpha1\nname: V2Bot\nservice_name: Ignored\nversion: 0.1\nspec:\n  agent: {name: a, model: local/echo}\n',
    });
    expect(agents.map((a) => [a.prefix, a.module, a.kind, a.inputType])).toEqual([
      ['/V1Bot/0.1', 'v1', 'Chat', 'BaseInput'],
      ['/V2Bot/0.1', 'v2', 'Chat', 'BaseMultiModalInput'],
    ]);
  });

  it('applies the defaults of our extensions', () => {
    const [a] = load({ 'a.yaml': v3({ agent: '    mcp_servers:\n      - {name: fs, command: npx}' }) });
    expect(a!.agent.max_tool_rounds).toBe(10);
    expect(a!.governance).toMatchObject({ autonomy_level: 'L1', plan_threshold: 3 });
    expect(a!.governance.tools).toBeUndefined();
    expect(a!.concurrency.on_busy).toBe('reject');
    expect(a!.agent.mcp_servers![0]!.transport).toBe('stdio');
  });

  it("marks whether spec.governance is given: without it, upstream's approval rule applies", () => {
    const [none, empty, set] = load({
      'a.yaml': v3({ name: 'A' }),
      'b.yaml': v3({ name: 'B', spec: '  governance: {}' }),
      'c.yaml': v3({ name: 'C', spec: '  governance:\n    autonomy_level: L3' }),
    });
    expect([none!.governed, empty!.governed, set!.governed]).toEqual([false, true, true]);
    expect(empty!.governance.autonomy_level).toBe('L1');
  });

  it('keeps unknown top-level, metadata and skill keys, and ignores kind/input_type where upstream does', () => {
    const [a] = load({
      'a.yaml': v3({
        head: [
          'kind: Anything',
          'input_type: NumbersInput',
          'x-owner: platform',
          'metadata:',
          '  description: d',
          '  icon: robot',
          '  skills:',
          '    - {id: s, name: S, description: D, tags: [t], level: 3}',
        ].join('\n'),
      }),
    });
    expect(a!.config['x-owner']).toBe('platform');
    expect(a!.config.metadata).toMatchObject({ icon: 'robot', skills: [{ id: 's', level: 3 }] });
    expect(a!.kind).toBe('Chat');
  });

  it('reads a key with no value as "not set", and 0 as a value', () => {
    const [a] = load({ 'a.yaml': v3({ agent: '    temperature:\n    max_tokens:\n    system_prompt:' }) });
    expect(a!.agent).not.toHaveProperty('temperature');
    expect(a!.agent).not.toHaveProperty('max_tokens');
    const [b] = load({ 'b.yaml': v3({ agent: '    temperature: 0' }) });
    expect(b!.agent.temperature).toBe(0);
  });

  it('orders Sequential tasks by task_no and indexes the agents by name', () => {
    const [a] = load({
      'seq.yaml': [
        'apiVersion: skagents/v1',
        'kind: Sequential',
        'service_name: Seq',
        'version: 0.1',
        'input_type: BaseInputWithUserContext',
        'spec:',
        '  agents:',
        '    - {name: writer, model: local/echo}',
        '    - {name: checker, model: local/echo}',
        '  tasks:',
        '    - {name: check, task_no: 2, instructions: "Check {{_draft}}", agent: checker}',
        '    - {name: draft, task_no: 1, instructions: "Draft for {{user_context.city}}", agent: writer}',
      ].join('\n'),
    });
    expect(a!.kind).toBe('Sequential');
    expect(a!.sequential!.tasks.map((t) => t.name)).toEqual(['draft', 'check']);
    expect([...a!.sequential!.agents.keys()]).toEqual(['writer', 'checker']);
    expect(a!.agent.name).toBe('writer');
  });

  it('reads *.yaml and *.yml (any case) of the directory, sorted, and not its subdirectories or other files', () => {
    const agents = load({
      'b.yml': v3({ name: 'B' }),
      'a.YAML': v3({ name: 'A' }),
      'notes.txt': 'not yaml',
      'agent.json': '{}',
      'drafts/c.yaml': v3({ name: 'C' }),
    });
    expect(agents.map((a) => a.name)).toEqual(['A', 'B']);
  });

  it('reads a single file when the path names one', () => {
    const dir = writeDir({ 'one.yaml': v3({ name: 'One' }), 'two.yaml': 'broken: [' });
    expect(loadAgentConfigs(join(dir, 'one.yaml')).map((a) => a.name)).toEqual(['One']);
  });

  it('asks the given check which local/ models exist', () => {
    const [a] = loadAgentConfigs(writeDir({ 'a.yaml': v3({ agent: '' }).replace('local/echo', 'local/tiny') }), (m) => m === 'local/tiny');
    expect(a!.agent.model).toBe('local/tiny');
  });
});

describe('loadAgentConfigs: problems', () => {
  it('names a missing path, and a directory with no agent file in it (subdirectories are not read)', () => {
    const dir = writeDir({ 'sub/a.yaml': v3() });
    expect(() => loadAgentConfigs(join(dir, 'nope'))).toThrow(
      `${join(dir, 'nope')}: does not exist (the agent config must be a YAML file or a directory of them)`,
    );
    expect(() => loadAgentConfigs(dir)).toThrow(`${dir}: no *.yaml or *.yml agent config in this directory (subdirectories are not read)`);
  });

  it('reports every problem of every file at once, in file order, and serves nothing', () => {
    expect(
      problems({
        'a.yaml': v3({ agent: '    temperature: 3\n    max_tokens: 0' }),
        'b.yaml': 'apiVersion: tealagents/v9\n',
        'c.yaml': v3({ name: 'Fine' }),
      }),
    ).toEqual([
      'a.yaml:8: spec.agent.temperature: must be a number from 0 to 2 (got 3)',
      'a.yaml:9: spec.agent.max_tokens: must be an integer >= 1 (got 0)',
      'b.yaml:1: apiVersion: must be one of skagents/v1, skagents/v2alpha1, tealagents/v1alpha1, or another skagents/* version, served as skagents/v1 (got the string "tealagents/v9")',
      'b.yaml:1: name: is required (the agent name, a URL-safe string)',
      'b.yaml:1: version: is required (a version such as 0.1 or v1)',
      'b.yaml:1: spec: is required (a mapping)',
    ]);
  });

  it('refuses two agents on one prefix, also when only the case differs (Express matches paths case-insensitively)', () => {
    expect(problems({ 'a.yaml': v3(), 'b.yaml': v3(), 'c.yaml': v3({ name: 'BOT' }) })).toEqual([
      'b.yaml:2: name: the prefix /Bot/0.1 is already served by a.yaml',
      'c.yaml:2: name: the prefix /BOT/0.1 collides with /Bot/0.1 of a.yaml (URL paths are matched case-insensitively)',
    ]);
  });

  it('suggests the field a typo meant, points agent fields to spec.agent, or lists the allowed fields', () => {
    expect(
      problems({ 'a.yaml': v3({ agent: '    sytem_prompt: hi', spec: '  governanse: {}\n  concurrency: {on_busy: reject, mode: fast}\n  model: x' }) }),
    ).toEqual([
      'a.yaml:8: spec.agent.sytem_prompt: unknown field; did you mean "system_prompt"?',
      'a.yaml:9: spec.governanse: unknown field; did you mean "governance"?',
      'a.yaml:10: spec.concurrency.mode: unknown field (allowed here: on_busy)',
      'a.yaml:11: spec.model: unknown field here: it is an agent field, which belongs under spec.agent',
    ]);
  });

  it('names the bad item of a list and the bad entry of a map', () => {
    expect(
      problems({
        'a.yaml': v3({
          agent: '    plugins: [WeatherPlugin, 42]\n    mcp_servers:\n      - {name: fs, command: npx, args: [-y, 3]}',
          spec: '  governance:\n    tools:\n      plugin.fn: {risk: unsure}\n      other-tool: always',
        }),
      }),
    ).toEqual([
      'a.yaml:8: spec.agent.plugins: item 1 must be a non-empty string (got 42)',
      'a.yaml:10: spec.agent.mcp_servers.0.args: item 1 must be a string (quote numbers) (got 3)',
      'a.yaml:12: spec.governance.tools: the value of "other-tool" must be a mapping of settings (got the string "always")',
    ]);
    // A tool name with a dot still finds its line.
    expect(problems({ 'a.yaml': v3({ spec: '  governance:\n    tools:\n      plugin.fn: {risk: unsure}' }) })).toEqual([
      'a.yaml:10: spec.governance.tools.plugin.fn.risk: must be one of read_only, write_low_risk, write_high_risk (got the string "unsure")',
    ]);
  });

  it('refuses null where a field has a default (it cannot be unset)', () => {
    expect(problems({ 'a.yaml': v3({ agent: '    max_tool_rounds:', spec: '  concurrency:\n    on_busy:' }) })).toEqual([
      'a.yaml:8: spec.agent.max_tool_rounds: must be an integer >= 1 (got an empty value)',
      'a.yaml:10: spec.concurrency.on_busy: must be one of reject, enqueue (got an empty value)',
    ]);
  });

  it('applies the MCP server rules of upstream McpServerConfig', () => {
    const servers = [
      '    plugins: [WeatherPlugin]',
      '    mcp_servers:',
      '      - {name: a, transport: http, url: "https://x/mcp", command: "run | tee"}',
      '      - {name: b, transport: http, url: "https://x/mcp", scopes: [read]}',
      '      - {name: c, transport: http, url: "https://x/mcp", user_id_source: env}',
      '      - {name: "d e", command: npx}',
      '      - {name: f, transport: websocket, command: npx}',
      '      - {name: WeatherPlugin, command: npx}',
    ].join('\n');
    expect(problems({ 'a.yaml': v3({ agent: servers }) })).toEqual([
      'a.yaml:10: spec.agent.mcp_servers.0.command: must not contain any of ; & | ` $ (got the string "run | tee")',
      'a.yaml:11: spec.agent.mcp_servers.1.auth_server: is required when scopes is given (auth_server and scopes go together)',
      'a.yaml:12: spec.agent.mcp_servers.2.user_id_env_var: is required when user_id_source is env (the variable holding the user id)',
      'a.yaml:13: spec.agent.mcp_servers.3.name: must be a name of letters, digits, "_" and "-" (got the string "d e")',
      'a.yaml:14: spec.agent.mcp_servers.4.transport: must be one of stdio, http (got the string "websocket")',
      'a.yaml:15: spec.agent.mcp_servers.5.name: "WeatherPlugin" is also a plugin of this agent; tool names ({name}-{tool}) would clash',
    ]);
  });

  it('takes mcp_servers[].required (ours: the server is part of readiness) as a boolean only', () => {
    const [a] = load({ 'a.yaml': v3({ agent: '    mcp_servers:\n      - {name: fs, command: npx, required: true}\n      - {name: gh, command: npx}' }) });
    expect(a!.agent.mcp_servers!.map((m) => m.required)).toEqual([true, undefined]);
    expect(problems({ 'a.yaml': v3({ agent: '    mcp_servers:\n      - {name: fs, command: npx, required: "yes"}' }) })).toEqual([
      expect.stringMatching(/^a\.yaml:9: spec\.agent\.mcp_servers\.0\.required: must be /),
    ]);
  });

  it('still checks Sequential references and templates when other fields are wrong', () => {
    const seq = [
      'apiVersion: skagents/v1',
      'kind: Sequential',
      'service_name: Seq',
      'version: 0.1',
      'input_type: Custom',
      'spec:',
      '  agents:',
      '    - {name: a, model: local/nope}',
      '  tasks:',
      '    - {name: t, task_no: 1, instructions: "{{ x | upper }}", agent: b}',
    ].join('\n');
    expect(problems({ 'seq.yaml': seq })).toEqual([
      'seq.yaml:5: input_type: no type "Custom": it is none of upstream\'s standard types (BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext, BaseEmbeddedImage), and no custom_types.py, custom_types.ts or custom_types.js beside this file defines it',
      'seq.yaml:8: spec.agents.0.model: unknown built-in model "local/nope" (built-in models: local/echo)',
      'seq.yaml:10: spec.tasks.0.instructions: invalid template: unsupported expression "x | upper" (only names, .attr and ["key"] are supported)',
      'seq.yaml:10: spec.tasks.0.agent: no agent named "b" in spec.agents (agents: "a")',
    ]);
  });

  it('refuses spec.agent on a Sequential agent, and names/versions that are "." or ".."', () => {
    expect(
      problems({
        'a.yaml':
          'apiVersion: skagents/v1\nkind: Sequential\nservice_name: ".."\nversion: "."\ninput_type: BaseInput\nspec:\n  agent: {name: a, model: local/echo}\n',
      }),
    ).toEqual([
      'a.yaml:3: service_name: must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got the string "..")',
      'a.yaml:4: version: must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got the string ".")',
      'a.yaml:6: spec.agents: kind: Sequential needs at least one agent in spec.agents',
      'a.yaml:6: spec.tasks: kind: Sequential needs at least one task in spec.tasks',
      'a.yaml:7: spec.agent: kind: Sequential takes spec.agents and spec.tasks, not spec.agent',
    ]);
  });
});
