import { DynamicModule, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';

/** `GET /metrics`, registered only when `TA_METRICS_PROMETHEUS=true` (otherwise the path is a plain 404). */
@Module({})
export class MetricsModule {
  static register(enabled: boolean): DynamicModule {
    return { module: MetricsModule, controllers: enabled ? [MetricsController] : [] };
  }
}
