import { SetMetadata } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';

export const AGENT_ROUTE = 'ta:agent';

/** Marks a generated controller with the agent it serves (read by the telemetry interceptor). */
export const AgentRoute = (agent: AgentDefinition) => SetMetadata(AGENT_ROUTE, agent);

/** Nest route paths are relative; `/a/0.1` → `a/0.1`. */
export function controllerPath(agent: AgentDefinition): string {
  return agent.prefix.replace(/^\//, '');
}

/** Gives a generated controller class a readable name in logs and stack traces. */
export function named<T extends abstract new (...args: never[]) => unknown>(cls: T, name: string): T {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}
