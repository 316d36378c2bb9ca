import { InstructionTemplate, TemplateError } from '../sequential/instruction-template';
import { AgentFileConfig, API_VERSIONS, V1_KINDS } from './agent-file.schema';
import type { FieldProblem } from './config-problems';
import { isMapping } from './field-validators';

/** The model names the built-in offline models answer to (see `src/llm/local/`). */
export type LocalModelCheck = (model: string) => boolean;

/**
 * The rules that span fields, which the per-field schema cannot express: which `spec` shape the
 * apiVersion/kind takes, Sequential tasks naming real agents with valid templates, built-in model
 * names, unique MCP server names. They run even when some fields are invalid (every problem is
 * reported at once), so each check looks only at values of the right type: a value of the wrong
 * type has already been reported by the schema.
 */
export function checkAgentShape(config: AgentFileConfig, isKnownLocalModel: LocalModelCheck, knownLocalModels: string[]): FieldProblem[] {
  const out: FieldProblem[] = [];
  const spec = config.spec as unknown;
  if (!isMapping(spec)) return out;
  // Without a known apiVersion (and kind, for v1) the expected shape is unknown: the schema has
  // already said so, and guessing would only add noise. The per-agent checks still run.
  const isV1 = config.apiVersion === 'skagents/v1';
  if (API_VERSIONS.includes(config.apiVersion) && (!isV1 || (V1_KINDS as readonly unknown[]).includes(config.kind))) {
    if (isV1 && config.kind === 'Sequential') checkSequential(spec, out);
    else checkSingleAgent(spec, isV1 ? `kind: ${config.kind}` : config.apiVersion, out);
  }
  const agents: [string, unknown][] = [
    ...(spec.agent !== undefined ? [['spec.agent', spec.agent] as [string, unknown]] : []),
    ...(Array.isArray(spec.agents) ? spec.agents.map((a, i): [string, unknown] => [`spec.agents.${i}`, a]) : []),
  ];

  for (const [path, agent] of agents) {
    if (!isMapping(agent)) continue;
    const model = agent.model as unknown;
    if (typeof model === 'string' && model.startsWith('local/') && !isKnownLocalModel(model)) {
      out.push({ field: `${path}.model`, message: `unknown built-in model "${model}" (built-in models: ${knownLocalModels.join(', ')})` });
    }
    // Tools are named `{plugin}-{function}` and `{server}-{tool}`: a server named like a plugin of
    // the same agent could give two tools one name.
    const pluginNames = new Set([...textItems(agent.plugins), ...textItems(agent.remote_plugins)]);
    const servers = Array.isArray(agent.mcp_servers) ? agent.mcp_servers : [];
    const seen = new Set<string>();
    servers.forEach((s, i) => {
      const name = isMapping(s) ? (s.name as unknown) : undefined;
      if (typeof name !== 'string') return;
      const field = `${path}.mcp_servers.${i}.name`;
      if (seen.has(name)) out.push({ field, message: `duplicate MCP server name "${name}"` });
      else if (pluginNames.has(name)) {
        out.push({ field, message: `"${name}" is also a plugin of this agent; tool names ({name}-{tool}) would clash` });
      }
      seen.add(name);
    });
  }
  return out;
}

const textItems = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function checkSingleAgent(spec: Record<string, unknown>, what: string, out: FieldProblem[]): void {
  if (spec.agent === undefined || spec.agent === null) {
    const misplaced = ['name', 'model', 'system_prompt'].filter((k) => k in spec);
    out.push({
      field: 'spec.agent',
      message: misplaced.length
        ? `is required (found ${misplaced.join(', ')} directly under spec: move them under spec.agent)`
        : 'is required (the agent: name, model, system_prompt, ...)',
    });
  }
  if (spec.agents !== undefined) out.push({ field: 'spec.agents', message: `is only for skagents/v1 kind: Sequential, not ${what} (use spec.agent)` });
  if (spec.tasks !== undefined) out.push({ field: 'spec.tasks', message: `is only for skagents/v1 kind: Sequential, not ${what}` });
}

function checkSequential(spec: Record<string, unknown>, out: FieldProblem[]): void {
  if (spec.agent !== undefined) out.push({ field: 'spec.agent', message: 'kind: Sequential takes spec.agents and spec.tasks, not spec.agent' });
  const agents = Array.isArray(spec.agents) ? spec.agents : [];
  const tasks = Array.isArray(spec.tasks) ? spec.tasks : [];
  if (spec.agents === undefined || (Array.isArray(spec.agents) && !agents.length)) {
    out.push({ field: 'spec.agents', message: 'kind: Sequential needs at least one agent in spec.agents' });
  }
  if (spec.tasks === undefined || (Array.isArray(spec.tasks) && !tasks.length)) {
    out.push({ field: 'spec.tasks', message: 'kind: Sequential needs at least one task in spec.tasks' });
  }

  const names = new Set<string>();
  agents.forEach((a, i) => {
    const name = isMapping(a) ? a.name : undefined;
    if (typeof name !== 'string') return;
    if (names.has(name)) out.push({ field: `spec.agents.${i}.name`, message: `duplicate agent name "${name}"` });
    names.add(name);
  });

  const taskNames = new Set<string>();
  const taskNos = new Set<number>();
  tasks.forEach((t, i) => {
    if (!isMapping(t)) return;
    const at = `spec.tasks.${i}`;
    if (typeof t.instructions === 'string') {
      try {
        InstructionTemplate.compile(t.instructions);
      } catch (e) {
        if (!(e instanceof TemplateError)) throw e;
        out.push({ field: `${at}.instructions`, message: `invalid template: ${e.message}` });
      }
    }
    if (typeof t.agent === 'string' && t.agent && !names.has(t.agent)) {
      const known = [...names].map((n) => `"${n}"`).join(', ');
      out.push({ field: `${at}.agent`, message: `no agent named "${t.agent}" in spec.agents${known ? ` (agents: ${known})` : ''}` });
    }
    // `{{_name}}` reads an earlier task's output by name, so names must be unique; so must task_no (the order).
    if (typeof t.name === 'string') {
      if (taskNames.has(t.name)) out.push({ field: `${at}.name`, message: `duplicate task name "${t.name}"` });
      taskNames.add(t.name);
    }
    if (Number.isInteger(t.task_no)) {
      if (taskNos.has(t.task_no as number)) out.push({ field: `${at}.task_no`, message: `duplicate task_no ${String(t.task_no)}` });
      taskNos.add(t.task_no as number);
    }
  });
}
