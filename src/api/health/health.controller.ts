import { Controller, Get, Res, Type } from '@nestjs/common';
import type { Response } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { Public } from '../../auth/public.decorator';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { HealthService } from './health.service';

/** `GET /{name}/{version}/health`, `/health/live`, `/health/ready`: open, for every agent version. */
export function createHealthController(agent: AgentDefinition): Type<unknown> {
  @Controller(`${controllerPath(agent)}/health`)
  @AgentRoute(agent)
  @Public()
  class HealthController {
    constructor(private readonly health: HealthService) {}

    @Get()
    get() {
      return this.health.health(agent.version);
    }

    @Get('live')
    live() {
      return this.health.live();
    }

    @Get('ready')
    async ready(@Res({ passthrough: true }) res: Response) {
      const report = await this.health.ready(agent.source);
      if (!report.ready) res.status(503);
      return report;
    }
  }
  return named(HealthController, `HealthController[${agent.source}]`);
}
