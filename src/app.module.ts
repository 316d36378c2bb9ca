import { A2aModule } from './api/a2a/a2a.module';
import { AuditModule } from './api/audit/audit.module';
import { McpModule } from './api/mcp/mcp.module';
import { OpenAiCompatModule } from './api/openai/openai.module';
import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import type { Logger } from 'pino';
import { ApiCommonModule } from './api/common/api-common.module';
import { ServiceIndexModule } from './api/index/service-index.module';
import { ConsoleModule } from './api/console/console.module';
import { MetricsModule } from './api/metrics/metrics.module';
import { StreamSocketModule } from './api/stateless/stream-socket.module';
import { V1Module } from './api/v1/v1.module';
import { V2Module } from './api/v2/v2.module';
import { V3Module } from './api/v3/v3.module';
import { AuthModule } from './auth/auth.module';
import { LOGGER, TELEMETRY } from './app.tokens';
import { ProblemDetailsFilter } from './common/errors/problem-details.filter';
import { CoreDependencies, CoreModule } from './core.module';
import { TelemetryInterceptor } from './telemetry/telemetry.interceptor';
import { Telemetry } from './telemetry/telemetry';

/** Composition root: the versioned API modules over shared services, one filter, one interceptor. */
@Module({})
export class AppModule {
  static forRoot(deps: CoreDependencies): DynamicModule {
    // The config was validated before Nest started; the store is pinged on every readiness probe.
    const readiness = [
      { name: 'config', check: async () => undefined },
      { name: 'state_store', check: () => deps.store.ping() },
    ];
    // TA_FRONT_DOORS: the protocols the agents are served on (each one's routes exist only when named).
    const doors = deps.env.frontDoors;
    const rest = doors.has('rest');
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(deps),
        AuthModule.forRoot(deps.env.auth),
        ApiCommonModule.register(deps.agents, readiness),
        ...(rest ? [V1Module.register(deps.agents), V2Module.register(deps.agents)] : []),
        V3Module.register(deps.agents, { rest, agui: doors.has('agui') }),
        ...(doors.has('a2a') ? [A2aModule.register(deps.agents, deps.env)] : []),
        ...(doors.has('mcp') ? [McpModule.register(deps.agents, deps.env)] : []),
        ...(doors.has('openai') ? [OpenAiCompatModule.register(deps.agents, deps.env)] : []),
        StreamSocketModule,
        ServiceIndexModule.register(deps.agents, deps.env),
        ConsoleModule.register(deps.env, deps.agents),
        MetricsModule.register(deps.env.telemetry.prometheus),
        AuditModule.register(!!deps.archive),
      ],
      providers: [
        { provide: APP_FILTER, useFactory: (logger: Logger, telemetry: Telemetry) => new ProblemDetailsFilter(logger, telemetry), inject: [LOGGER, TELEMETRY] },
        { provide: APP_INTERCEPTOR, useClass: TelemetryInterceptor },
      ],
    };
  }
}
