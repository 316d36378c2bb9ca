import { Body, Controller, Inject, Post, Req, Res, Type } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG } from '../../app.tokens';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import type { EnvConfig } from '../../config/env.config';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { idempotencyClaim } from '../common/idempotency-key';
import { AgUiRunsService } from './ag-ui-runs.service';
import { AgUiStream } from './ag-ui-stream';
import { parseRunInput } from './run-input';
import { BEARER_TOKEN } from '../../auth/principal';

/**
 * The AG-UI route of one tealagents/v1alpha1 agent (docs/api.md, "AG-UI"). Thin: the guard
 * authenticates (401 problem+json), an input that is no RunAgentInput is 422 problem+json, and
 * everything after is an AG-UI event stream (ag-ui-runs.service.ts).
 */
export function createAgUiController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  class AgUiController {
    constructor(
      private readonly runs: AgUiRunsService,
      @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    ) {}

    @Post('ag-ui')
    @RateLimited()
    async run(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
      const input = parseRunInput(body);
      const claim = idempotencyClaim(req, principal, agent, 'ag-ui', body);
      const stream = new AgUiStream(res, req.header('accept'), this.env.http.sseKeepaliveMs);
      await this.runs.serve(agent, principal, input, stream, { bearerToken: req[BEARER_TOKEN], instance: req.originalUrl, claim });
    }
  }
  return named(AgUiController, `AgUiController[${agent.source}]`);
}
