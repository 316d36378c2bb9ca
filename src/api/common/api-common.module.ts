import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { createDocsController } from '../docs/docs.controller';
import { createHealthController } from '../health/health.controller';
import { HealthService } from '../health/health.service';
import { READINESS_CHECKS, ReadinessCheck } from '../health/readiness';

/** Routes every agent has whatever its version: health and docs. */
@Module({})
export class ApiCommonModule {
  static register(agents: AgentDefinition[], readinessChecks: ReadinessCheck[]): DynamicModule {
    return {
      module: ApiCommonModule,
      providers: [HealthService, { provide: READINESS_CHECKS, useValue: readinessChecks }],
      controllers: agents.flatMap((a) => [createHealthController(a), createDocsController(a)]),
    };
  }
}
