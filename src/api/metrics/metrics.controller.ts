import { Controller, Get, Header, Inject } from '@nestjs/common';
import { TELEMETRY } from '../../app.tokens';
import { Public } from '../../auth/public.decorator';
import { Telemetry } from '../../telemetry/telemetry';

/** The Prometheus text exposition format, version 0.0.4 (what every scraper reads). */
const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * `GET /metrics` (only with `TA_METRICS_PROMETHEUS=true`): every metric of the process in the
 * Prometheus text format, read from the OpenTelemetry Prometheus reader at scrape time. Open, as
 * scrapers carry no Entra token: operators keep it off the public network (docs/configuration.md).
 * Not an agent route, so not in any openapi.json.
 */
@Controller('metrics')
@Public()
export class MetricsController {
  constructor(@Inject(TELEMETRY) private readonly telemetry: Telemetry) {}

  @Get()
  @Header('Content-Type', PROMETHEUS_TEXT)
  @Header('Cache-Control', 'no-store')
  scrape(): Promise<string> {
    return this.telemetry.prometheusText();
  }
}
