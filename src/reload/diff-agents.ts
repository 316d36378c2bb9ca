import type { AgentDefinition } from '../agents/config/agent-definition';

export interface AgentDiff {
  added: string[];
  changed: string[];
  removed: string[];
}

/** Maps (sequential agents) compare by their entries; JSON.stringify would print them as `{}`. */
const comparable = (agent: AgentDefinition): string => JSON.stringify(agent, (_key, value: unknown) => (value instanceof Map ? [...value.entries()] : value));

/** Which agents (by `/{name}/{version}` prefix) a reload adds, changes and removes. */
export function diffAgents(before: AgentDefinition[], after: AgentDefinition[]): AgentDiff {
  const old = new Map(before.map((a) => [a.prefix, comparable(a)]));
  const now = new Map(after.map((a) => [a.prefix, comparable(a)]));
  return {
    added: [...now.keys()].filter((p) => !old.has(p)),
    changed: [...now.keys()].filter((p) => old.has(p) && old.get(p) !== now.get(p)),
    removed: [...old.keys()].filter((p) => !now.has(p)),
  };
}
