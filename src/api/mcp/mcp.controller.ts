import { Body, Controller, Delete, Get, Post, Req, Res, Type, UseFilters } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { McpAuthChallengeFilter } from './mcp-auth-challenge.filter';
import { McpEndpointService } from './mcp-endpoint.service';

/**
 * The MCP endpoint of one agent (docs/mcp.md): Streamable HTTP, stateless. Thin: the guard
 * authenticates (a refusal names the protected-resource metadata in `WWW-Authenticate`), the
 * endpoint service does the rest. No server-initiated stream and no session to end: GET and DELETE
 * are 405, as the transport specification allows a server without them.
 */
export function createMcpController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  @UseFilters(McpAuthChallengeFilter)
  class McpController {
    constructor(private readonly endpoint: McpEndpointService) {}

    @Post('mcp')
    @RateLimited()
    async post(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
      await this.endpoint.serve(agent, principal, req, res, body);
    }

    @Get('mcp')
    stream(@Res() res: Response): void {
      res.status(405).setHeader('Allow', 'POST').end();
    }

    @Delete('mcp')
    end(@Res() res: Response): void {
      res.status(405).setHeader('Allow', 'POST').end();
    }
  }
  return named(McpController, `McpController[${agent.source}]`);
}
