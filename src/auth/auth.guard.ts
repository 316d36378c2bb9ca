import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { Authenticator } from './authenticator';
import { IS_PUBLIC } from './public.decorator';

/**
 * Global guard: every route but the @Public ones (health, openapi.json, docs) needs a caller. The
 * Authenticator decides who that is (dev identity, or a validated Entra ID token).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly authenticator: Authenticator,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [ctx.getHandler(), ctx.getClass()]);
    if (isPublic) return true;
    const req = ctx.switchToHttp().getRequest<Request>();
    req.principal = await this.authenticator.authenticate(req);
    return true;
  }
}
