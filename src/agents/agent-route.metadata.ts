import { SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { AgentDefinition } from './config/agent-definition';
import { routeMetadata } from '../common/http/route-metadata';

export const AGENT_ROUTE = 'ta:agent';

/**
 * Marks a generated controller with the agent it serves, for the cross-cutting parts that need it
 * (the telemetry interceptor, per-agent auth requirements).
 */
export const AgentRoute = (agent: AgentDefinition) => SetMetadata(AGENT_ROUTE, agent);

export const AGENT_OF_REQUEST = 'ta:agent-of-request';

/** Picks the agent a request names (undefined: none of ours). */
export type AgentOfRequest = (req: Request) => AgentDefinition | undefined;

/**
 * Marks a controller whose routes serve whichever agent the request names (the OpenAI-compatible
 * endpoint's `model`, in the parsed body), for the same parts as AgentRoute. They look it up only
 * when the class has no AgentRoute, so an agent's own routes pay nothing for it.
 */
export const AgentOfRequest = (pick: AgentOfRequest) => SetMetadata(AGENT_OF_REQUEST, pick);

/**
 * The agent a request to a route of `controller` serves: the class's AgentRoute, else what its
 * AgentOfRequest picks from the request; undefined for a route of no agent. Asked on every request
 * by the guards and the telemetry interceptor (the class's metadata read once: routeMetadata).
 */
export function agentOfRoute(controller: object, req: Request): AgentDefinition | undefined {
  return routeMetadata<AgentDefinition>(AGENT_ROUTE, controller) ?? routeMetadata<AgentOfRequest>(AGENT_OF_REQUEST, controller)?.(req);
}
