import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../../auth/public.decorator';
import { HealthService } from './health.service';

/**
 * `GET /health/live` and `/health/ready` at the root (API.md), for callers that probe the process
 * without knowing an agent's name (a container HEALTHCHECK, Kubernetes probes; docs/deploy.md).
 * Readiness lists every dependency with its state (`{name, state, detail?}`): the store, the
 * identity provider (Entra mode) and every agent's `required: true` MCP server; 503 when one is down.
 */
@Controller('health')
@Public()
export class ProcessHealthController {
  constructor(private readonly health: HealthService) {}

  @Get('live')
  live() {
    return this.health.live();
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    const report = await this.health.processReady();
    if (!report.ready) res.status(503);
    return report;
  }
}
