import { Body, Controller, Get, Post, Req, Res, Type } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { Public } from '../../auth/public.decorator';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { A2aGatewayService } from './a2a-gateway.service';

/**
 * The A2A routes of one agent (docs/a2a.md): its card, open (a discovery document, as
 * `openapi.json` is), and the JSON-RPC endpoint, authenticated and rate-limited as every agent route.
 */
export function createA2aController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  class A2aController {
    constructor(private readonly endpoint: A2aGatewayService) {}

    @Get('.well-known/agent-card.json')
    @Public()
    card(@Req() req: Request) {
      return this.endpoint.card(agent, req);
    }

    @Post('a2a')
    @RateLimited()
    async rpc(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
      await this.endpoint.serve(agent, principal, body, req, res);
    }
  }
  return named(A2aController, `A2aController[${agent.source}]`);
}

/**
 * `GET /.well-known/agent-card.json`: the card of the agent TA_A2A_DEFAULT_AGENT names (`name/version`
 * or `name:version`), so a client given only the server's URL finds an agent; 404 when none is named.
 */
export function createA2aRootCardController(agent: AgentDefinition | undefined): Type<unknown> {
  @Controller('.well-known')
  @Public()
  class A2aRootCardController {
    constructor(private readonly endpoint: A2aGatewayService) {}

    @Get('agent-card.json')
    card(@Req() req: Request) {
      if (!agent) throw new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'No default A2A agent: set TA_A2A_DEFAULT_AGENT to serve an agent card here');
      return this.endpoint.card(agent, req);
    }
  }
  return A2aRootCardController;
}
