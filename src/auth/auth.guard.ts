import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { AGENT_ROUTE } from '../agents/agent-route.metadata';
import type { AccessPolicyOverride } from './access-policy';
import { Authenticator } from './authenticator';
import { IS_PUBLIC } from './public.decorator';

/**
 * Global guard: every route but the @Public ones (health, openapi.json, docs) needs a caller. The
 * Authenticator decides who that is (dev identity, or a validated Entra ID token); an agent's
 * `spec.auth` overrides the required scopes/roles for that agent's routes. Guards run before
 * pipes and handlers, so a refused request never reaches the store.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const agent = this.reflector.getAllAndOverride<AgentDefinition | undefined>(AGENT_ROUTE, targets);
    const req = ctx.switchToHttp().getRequest<Request>();
    req.principal = await this.authenticator.authenticate(req, agentAccessOverride(agent));
    return true;
  }
}

/** `spec.auth` of the agent whose route this is (validated at boot by auth.schema.ts). */
export function agentAccessOverride(agent: AgentDefinition | undefined): AccessPolicyOverride | undefined {
  return agent?.config.spec.auth;
}
