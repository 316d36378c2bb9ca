import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { Authenticator } from '../../auth/authenticator';
import { ToolRegistry } from '../../tools/tool-registry';
import { createDocsController } from '../docs/docs.controller';
import { createHealthController } from '../health/health.controller';
import { dependencyChecks } from '../health/dependency-checks';
import { HealthService } from '../health/health.service';
import { ProcessHealthController } from '../health/process-health.controller';
import { READINESS_CHECKS, ReadinessCheck } from '../health/readiness';

/** Routes every agent has whatever its version: health and docs; and the process's own probes. */
@Module({})
export class ApiCommonModule {
  static register(agents: AgentDefinition[], readinessChecks: ReadinessCheck[]): DynamicModule {
    return {
      module: ApiCommonModule,
      providers: [
        HealthService,
        {
          provide: READINESS_CHECKS,
          useFactory: (auth?: Authenticator, tools?: ToolRegistry) => [...readinessChecks, ...dependencyChecks(auth, tools)],
          // Optional: a test app of health routes alone has neither.
          inject: [
            { token: Authenticator, optional: true },
            { token: ToolRegistry, optional: true },
          ],
        },
      ],
      controllers: [ProcessHealthController, ...agents.flatMap((a) => [createHealthController(a), createDocsController(a)])],
    };
  }
}
