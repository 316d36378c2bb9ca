import { DynamicModule, Module } from '@nestjs/common';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { CONSOLE_DIST } from './console-assets';
import { createConsoleController } from './console.controller';

/** The web console at `/console` (docs/console.md); no routes at all when `TA_CONSOLE=false`. */
@Module({})
export class ConsoleModule {
  static register(env: Pick<EnvConfig, 'auth' | 'console'>, agents: AgentDefinition[], dir = CONSOLE_DIST): DynamicModule {
    return { module: ConsoleModule, controllers: env.console.enabled ? [createConsoleController(env, agents, dir)] : [] };
  }
}
