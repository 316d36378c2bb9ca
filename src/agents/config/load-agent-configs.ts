import { LOCAL_MODELS, isKnownLocalModel as builtInLocalModel } from '../../llm/local/local-models';
import { CustomTypes } from '../custom-types/custom-types';
import { AgentDefinition } from './agent-definition';
import type { LocalModelCheck } from './check-agent-shape';
import { ConfigError } from './config-error';
import { formatProblem } from './config-problems';
import { listConfigFiles } from './list-config-files';
import { parseAgentYaml } from './parse-agent-yaml';
import { toAgentDefinition } from './to-agent-definition';
import { validateAgentFile } from './validate-agent-file';

export type { LocalModelCheck } from './check-agent-shape';

/**
 * Reads `TA_SERVICE_CONFIG` (one YAML file, or every *.yaml/*.yml of a directory, non-recursive),
 * validates every file, and either returns the agents or throws one ConfigError listing every
 * problem as `file:line: field.path: message` (`file:line:column: YAML syntax error: ...` when the
 * file does not parse; `file: message` for a problem with the whole file). `onWarning` hears what
 * is accepted but deserves a look (a class of a custom_types.py defined again), formatted alike.
 */
export function loadAgentConfigs(
  path: string,
  isKnownLocalModel: LocalModelCheck = builtInLocalModel,
  onWarning: (warning: string) => void = () => {},
): AgentDefinition[] {
  const { files, problems } = listConfigFiles(path);
  const knownLocalModels = [...LOCAL_MODELS.keys()];
  const agents: AgentDefinition[] = [];
  const customTypes = new CustomTypes();
  const nameLines = new Map<AgentDefinition, number | undefined>();
  for (const file of files) {
    const parsed = parseAgentYaml(file);
    if (!parsed.raw) {
      problems.push(...parsed.problems.map((p) => formatProblem(file, p)));
      continue;
    }
    const result = validateAgentFile(parsed.raw, isKnownLocalModel, knownLocalModels);
    // input_type / output_type naming custom types (custom_types.py/.ts beside the file).
    const types = customTypes.forAgent(file, parsed.raw, parsed.locate);
    // In file order (stable, so a field's own problem stays before the cross-field ones).
    const located = [...result.problems.map((p) => ({ ...p, line: parsed.locate(p.field) })), ...types.fieldProblems];
    located.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    problems.push(...located.map((p) => formatProblem(file, p)), ...types.fileProblems);
    types.fileWarnings.forEach((w) => onWarning(w));
    if (result.config && !types.fieldProblems.length) {
      const agent = { ...toAgentDefinition(file, result.config), inputSchema: types.types.input, outputSchema: types.types.output };
      agents.push(agent);
      nameLines.set(agent, parsed.locate(agent.module === 'v1' ? 'service_name' : 'name'));
    }
  }
  problems.push(...duplicatePrefixes(agents, nameLines));
  if (problems.length) throw new ConfigError(problems);
  return agents;
}

/**
 * Two agents on one prefix would shadow each other. Express matches paths case-insensitively, so
 * `/Bot/1` and `/bot/1` collide too.
 */
function duplicatePrefixes(agents: AgentDefinition[], lines: Map<AgentDefinition, number | undefined>): string[] {
  const out: string[] = [];
  const byPrefix = new Map<string, AgentDefinition>();
  for (const a of agents) {
    const key = a.prefix.toLowerCase();
    const other = byPrefix.get(key);
    const field = a.module === 'v1' ? 'service_name' : 'name';
    const line = lines.get(a);
    if (!other) byPrefix.set(key, a);
    else if (other.prefix === a.prefix) {
      out.push(formatProblem(a.file, { field, line, message: `the prefix ${a.prefix} is already served by ${other.file}` }));
    } else {
      out.push(
        formatProblem(a.file, {
          field,
          line,
          message: `the prefix ${a.prefix} collides with ${other.prefix} of ${other.file} (URL paths are matched case-insensitively)`,
        }),
      );
    }
  }
  return out;
}
