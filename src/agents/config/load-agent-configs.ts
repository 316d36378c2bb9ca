import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { isMap, isScalar, parseDocument } from 'yaml';
import { AgentDefinition, moduleFor } from './agent-definition';
import { AgentSpecConfig } from './agent.schema';
import { AgentFileConfig } from './agent-file.schema';
import { ConfigError } from './config-error';
import { flattenValidationErrors } from './flatten-validation-errors';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';
import { InstructionTemplate, TemplateError } from '../sequential/instruction-template';

const YAML_EXTENSIONS = new Set(['.yaml', '.yml']);

/** The model names the built-in offline models answer to (see `src/llm/local/`). */
export type LocalModelCheck = (model: string) => boolean;

/**
 * Reads `TA_SERVICE_CONFIG` (one YAML file, or every *.yaml/*.yml of a directory, non-recursive),
 * validates every file, and either returns the agents or throws one ConfigError naming every problem
 * with its file and field path.
 */
export function loadAgentConfigs(path: string, isKnownLocalModel: LocalModelCheck): AgentDefinition[] {
  const problems: string[] = [];
  const files = listConfigFiles(path, problems);
  const agents: AgentDefinition[] = [];
  for (const file of files) {
    const before = problems.length;
    const def = loadOne(file, isKnownLocalModel, (field, msg) => problems.push(field ? `${file}: ${field}: ${msg}` : `${file}: ${msg}`));
    if (def && problems.length === before) agents.push(def);
  }
  const byPrefix = new Map<string, string>();
  for (const a of agents) {
    const other = byPrefix.get(a.prefix);
    if (other) problems.push(`${a.file}: name/version: prefix ${a.prefix} is already served by ${other}`);
    else byPrefix.set(a.prefix, a.file);
  }
  if (problems.length) throw new ConfigError(problems);
  return agents;
}

function listConfigFiles(path: string, problems: string[]): string[] {
  const abs = resolve(path);
  let st;
  try {
    st = statSync(abs);
  } catch {
    problems.push(`${abs}: no such file or directory (TA_SERVICE_CONFIG)`);
    return [];
  }
  if (st.isFile()) return [abs];
  const files = readdirSync(abs)
    .filter((f) => YAML_EXTENSIONS.has(extname(f).toLowerCase()))
    .sort()
    .map((f) => join(abs, f))
    .filter((f) => statSync(f).isFile());
  if (!files.length) problems.push(`${abs}: no *.yaml or *.yml agent config in this directory (TA_SERVICE_CONFIG)`);
  return files;
}

type Report = (field: string, message: string) => void;

function loadOne(file: string, isKnownLocalModel: LocalModelCheck, report: Report): AgentDefinition | undefined {
  const raw = parseYaml(file, report);
  if (!raw) return undefined;

  const config = plainToInstance(AgentFileConfig, raw);
  const errors = flattenValidationErrors(validateSync(config, { forbidUnknownValues: false }));
  for (const e of errors) report(e.field, e.message);
  // Typos under spec.* must not pass silently, while unknown top-level keys are kept (CONFIG.md).
  const spec = config.spec;
  if (spec && typeof spec === 'object') {
    const strict = validateSync(spec, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: false });
    for (const e of flattenValidationErrors(strict, 'spec')) {
      if (e.message.startsWith('unknown field')) report(e.field, e.message);
    }
  }
  if (errors.length) return undefined;

  checkShape(config, report);
  for (const [i, agent] of agentsOf(config).entries()) {
    const field = config.spec.agents ? `spec.agents.${i}.model` : 'spec.agent.model';
    if (agent.model.startsWith('local/') && !isKnownLocalModel(agent.model)) {
      report(field, `unknown built-in model "${agent.model}"`);
    }
  }
  return toDefinition(file, config);
}

function parseYaml(file: string, report: Report): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    report('', `cannot read file: ${(e as Error).message}`);
    return undefined;
  }
  const doc = parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length) {
    for (const e of doc.errors) report('', `YAML syntax error: ${e.message.split('\n')[0]}`);
    return undefined;
  }
  if (!isMap(doc.contents)) {
    report('', 'the file must hold one YAML mapping (an agent config)');
    return undefined;
  }
  const raw = doc.toJS() as Record<string, unknown>;
  // Python's str(config.version) keeps `0.1` as "0.1"; reading the scalar's source text does the same
  // and also keeps `1.0` as "1.0" (a JS number would print "1").
  const versionNode = doc.contents.get('version', true);
  if (isScalar(versionNode) && versionNode.value !== null && typeof versionNode.value !== 'object') {
    const source = (versionNode.srcToken as { source?: unknown } | undefined)?.source;
    raw.version = typeof source === 'string' && source.length ? source.trim() : String(versionNode.value);
  }
  return raw;
}

function agentsOf(config: AgentFileConfig): AgentSpecConfig[] {
  return config.spec.agents ?? (config.spec.agent ? [config.spec.agent] : []);
}

function checkShape(config: AgentFileConfig, report: Report): void {
  const spec = config.spec;
  const sequential = config.apiVersion === 'skagents/v1' && config.kind === 'Sequential';
  if (!sequential) {
    if (!spec.agent) report('spec.agent', 'spec.agent is required');
    if (spec.agents) report('spec.agents', 'spec.agents is only for skagents/v1 kind: Sequential (use spec.agent)');
    if (spec.tasks) report('spec.tasks', 'spec.tasks is only for skagents/v1 kind: Sequential');
    return;
  }
  if (spec.agent) report('spec.agent', 'kind: Sequential takes spec.agents and spec.tasks, not spec.agent');
  if (!spec.agents?.length) report('spec.agents', 'kind: Sequential needs at least one agent in spec.agents');
  if (!spec.tasks?.length) report('spec.tasks', 'kind: Sequential needs at least one task in spec.tasks');
  const names = new Set<string>();
  for (const [i, a] of (spec.agents ?? []).entries()) {
    if (names.has(a.name)) report(`spec.agents.${i}.name`, `duplicate agent name "${a.name}"`);
    names.add(a.name);
  }
  const taskNos = new Set<number>();
  for (const [i, t] of (spec.tasks ?? []).entries()) {
    try {
      InstructionTemplate.compile(t.instructions);
    } catch (e) {
      if (!(e instanceof TemplateError)) throw e;
      report(`spec.tasks.${i}.instructions`, e.message);
    }
    if (!names.has(t.agent)) report(`spec.tasks.${i}.agent`, `no agent named "${t.agent}" in spec.agents`);
    if (taskNos.has(t.task_no)) report(`spec.tasks.${i}.task_no`, `duplicate task_no ${t.task_no}`);
    taskNos.add(t.task_no);
  }
}

function toDefinition(file: string, config: AgentFileConfig): AgentDefinition {
  const module = moduleFor(config.apiVersion);
  const name = (module === 'v1' ? config.service_name : config.name) as string;
  const version = config.version;
  const spec = config.spec;
  const sequential =
    spec.agents && spec.tasks
      ? {
          agents: new Map(spec.agents.map((a) => [a.name, a])),
          tasks: [...spec.tasks].sort((a, b) => a.task_no - b.task_no),
        }
      : undefined;
  return {
    apiVersion: config.apiVersion,
    module,
    name,
    version,
    prefix: `/${name}/${version}`,
    source: `${name}:${version}`,
    description: config.metadata?.description?.trim() || config.description?.trim() || `${name} API`,
    kind: (module === 'v1' ? config.kind : 'Chat') as AgentDefinition['kind'],
    inputType: module === 'v1' ? config.input_type! : 'BaseMultiModalInput',
    agent: (spec.agent ?? spec.agents![0])!,
    sequential,
    governance: spec.governance ?? new GovernanceConfig(),
    concurrency: spec.concurrency ?? new ConcurrencyConfig(),
    file,
    config,
  };
}
