import { Controller, Get, Inject, Req, Type } from '@nestjs/common';
import type { Request } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG } from '../../app.tokens';
import { Public } from '../../auth/public.decorator';
import type { EnvConfig } from '../../config/env.config';
import { named } from '../common/agent-route';
import { PROTECTED_RESOURCE_PATH, protectedResourceMetadata, publicOrigin } from './protected-resource.util';

const ROOT = PROTECTED_RESOURCE_PATH.slice(1);

/**
 * `GET /.well-known/oauth-protected-resource/{name}/{version}/mcp`: the metadata of one agent's MCP
 * endpoint (RFC 9728 §3.1, what the 401's `resource_metadata` names). Open, as discovery must be.
 */
export function createProtectedResourceController(agent: AgentDefinition): Type<unknown> {
  @Controller(`${ROOT}${agent.prefix}/mcp`)
  class ProtectedResourceController {
    constructor(@Inject(ENV_CONFIG) private readonly env: EnvConfig) {}

    @Get()
    @Public()
    metadata(@Req() req: Request) {
      return protectedResourceMetadata(`${publicOrigin(req)}${agent.prefix}/mcp`, this.env.auth, `${agent.name} ${agent.version} (MCP)`);
    }
  }
  return named(ProtectedResourceController, `ProtectedResourceController[${agent.source}]`);
}

/** `GET /.well-known/oauth-protected-resource`: the server's origin as the resource (clients that look at the root first). */
@Controller(ROOT)
export class RootProtectedResourceController {
  constructor(@Inject(ENV_CONFIG) private readonly env: EnvConfig) {}

  @Get()
  @Public()
  metadata(@Req() req: Request) {
    return protectedResourceMetadata(`${publicOrigin(req)}/`, this.env.auth);
  }
}
