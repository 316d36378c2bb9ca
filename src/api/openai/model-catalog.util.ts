import type { AgentDefinition } from '../../agents/config/agent-definition';

/** `GET /openai/v1/models` entry: OpenAI's model object, plus what a chooser needs to know of the agent. */
export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  description: string;
  /** A tealagents/v1alpha1 agent: it keeps the conversation (continue it with `metadata.task_id`). */
  stateful: boolean;
}

/** An agent's model id: `{name}/{version}`, its route prefix without the leading slash. */
export function modelIdOf(agent: Pick<AgentDefinition, 'prefix'>): string {
  return agent.prefix.slice(1);
}

/**
 * The agents the OpenAI-compatible endpoint serves, by model id. Built once per application (a
 * config reload builds a new one), so naming the agent of a request is one map lookup.
 */
export class ModelCatalog {
  private readonly byId: Map<string, AgentDefinition>;

  constructor(
    readonly agents: readonly AgentDefinition[],
    /** Unix seconds the models were loaded (OpenAI's `created`). */
    private readonly created = Math.floor(Date.now() / 1000),
  ) {
    this.byId = new Map(agents.map((a) => [modelIdOf(a), a]));
  }

  /** The agent `model` names; undefined for anything else (not a string, no such agent). */
  named(model: unknown): AgentDefinition | undefined {
    return typeof model === 'string' ? this.byId.get(model) : undefined;
  }

  entryOf(agent: AgentDefinition): ModelEntry {
    return {
      id: modelIdOf(agent),
      object: 'model',
      created: this.created,
      owned_by: 'teal-agent-server',
      description: agent.description,
      stateful: agent.module === 'v3',
    };
  }
}
