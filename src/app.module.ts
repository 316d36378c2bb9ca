import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import type { Logger } from 'pino';
import { ApiCommonModule } from './api/common/api-common.module';
import { V1Module } from './api/v1/v1.module';
import { V2Module } from './api/v2/v2.module';
import { LOGGER } from './app.tokens';
import { ProblemDetailsFilter } from './common/errors/problem-details.filter';
import { CoreDependencies, CoreModule } from './core.module';
import { TelemetryInterceptor } from './telemetry/telemetry.interceptor';

/** Composition root: the versioned API modules over shared services, one filter, one interceptor. */
@Module({})
export class AppModule {
  static forRoot(deps: CoreDependencies): DynamicModule {
    const configCheck = { name: 'config', check: async () => undefined };
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(deps),
        ApiCommonModule.register(deps.agents, [configCheck]),
        V1Module.register(deps.agents),
        V2Module.register(deps.agents),
      ],
      providers: [
        { provide: APP_FILTER, useFactory: (logger: Logger) => new ProblemDetailsFilter(logger), inject: [LOGGER] },
        { provide: APP_INTERCEPTOR, useClass: TelemetryInterceptor },
      ],
    };
  }
}
