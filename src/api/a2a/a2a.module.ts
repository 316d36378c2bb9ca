import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';

/** A2A (docs/a2a.md): the agent card and JSON-RPC endpoint of every agent. Registered only when TA_FRONT_DOORS names it. */
@Module({})
export class A2aModule {
  static register(_agents: AgentDefinition[], _env: EnvConfig): DynamicModule {
    return { module: A2aModule };
  }
}
