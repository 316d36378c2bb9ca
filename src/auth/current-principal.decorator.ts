import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { Principal } from './principal';

/** The authenticated caller, set by the AuthGuard; a route without one is a bug, not a 401. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<Request>().principal;
  if (!principal) throw new DomainError(ErrorCode.INTERNAL, 'route reached without an authenticated principal');
  return principal;
});

/** The caller's app roles (Request.roles): empty when its token has none. */
export const CallerRoles = createParamDecorator((_: unknown, ctx: ExecutionContext): readonly string[] => ctx.switchToHttp().getRequest<Request>().roles ?? []);
