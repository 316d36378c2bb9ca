import { AgentDefinition, moduleFor } from './agent-definition';
import { AgentFileConfig } from './agent-file.schema';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';
import { LimitsConfig } from './limits.schema';
import { toWebhookTargets } from './webhooks.schema';

/** A valid config (every check passed) as the AgentDefinition the rest of the code reads. */
export function toAgentDefinition(file: string, config: AgentFileConfig): AgentDefinition {
  const module = moduleFor(config.apiVersion);
  // Upstream reads `service_name` for skagents/v1 and `name` for the other two.
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
    // API.md §2: the orchestrators discover agents by this text, so it is never empty.
    description: config.metadata?.description?.trim() || config.description?.trim() || `${name} API`,
    kind: (module === 'v1' ? config.kind : 'Chat') as AgentDefinition['kind'],
    inputType: module === 'v1' ? config.input_type! : 'BaseMultiModalInput',
    agent: (spec.agent ?? spec.agents![0])!,
    sequential,
    governance: spec.governance ?? new GovernanceConfig(),
    governed: spec.governance !== undefined,
    concurrency: spec.concurrency ?? new ConcurrencyConfig(),
    limits: spec.limits ?? new LimitsConfig(),
    webhooks: toWebhookTargets(spec.webhooks),
    file,
    config,
  };
}
