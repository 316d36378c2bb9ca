import { SetMetadata } from '@nestjs/common';
import type { AgentDefinition } from './config/agent-definition';

export const AGENT_ROUTE = 'ta:agent';

/**
 * Marks a generated controller with the agent it serves, for the cross-cutting parts that need it
 * (the telemetry interceptor, per-agent auth requirements).
 */
export const AgentRoute = (agent: AgentDefinition) => SetMetadata(AGENT_ROUTE, agent);
