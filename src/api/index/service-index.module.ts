import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { buildServiceIndex } from './service-index';
import { SERVICE_INDEX, ServiceIndexController } from './service-index.controller';

/** Where the web console is served (src/api/console); the index links it unless TA_CONSOLE=false. */
export const CONSOLE_PATH = '/console';

/** `GET /`, the service index (docs/api.md, Service index). */
@Module({})
export class ServiceIndexModule {
  static register(agents: AgentDefinition[], env: EnvConfig): DynamicModule {
    const index = buildServiceIndex(agents, { consolePath: env.console.enabled ? CONSOLE_PATH : null, a2a: env.frontDoors.has('a2a') });
    return {
      module: ServiceIndexModule,
      providers: [{ provide: SERVICE_INDEX, useValue: index }],
      controllers: [ServiceIndexController],
    };
  }
}
