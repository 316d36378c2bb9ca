import { AgentDefinition } from '../../agents/config/agent-definition';

export { AgentRoute } from '../../agents/agent-route.metadata';

/** Nest route paths are relative; `/a/0.1` → `a/0.1`. */
export function controllerPath(agent: AgentDefinition): string {
  return agent.prefix.replace(/^\//, '');
}

/** Gives a generated controller class a readable name in logs and stack traces. */
export function named<T extends abstract new (...args: never[]) => unknown>(cls: T, name: string): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}
