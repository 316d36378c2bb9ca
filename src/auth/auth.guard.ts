import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { agentOfRoute } from '../agents/agent-route.metadata';
import { MaybeAsync, thenOrNow } from '../common/concurrency/maybe-async';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { AuditLog } from '../common/logging/audit-log';
import { callerFields, LogFields } from '../common/logging/log-context';
import type { AccessPolicyOverride } from './access-policy';
import { Authenticator } from './authenticator';
import type { Principal } from './principal';
import { claimedIdentityOf } from './entra/claimed-identity';
import { refusedTenantOf } from './entra/entra-errors';
import { isPublicRoute } from './public.decorator';

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
    private readonly audit: AuditLog,
  ) {}

  /** Synchronous when the authenticator is (Nest awaits no promise then). */
  canActivate(ctx: ExecutionContext): MaybeAsync<boolean> {
    if (ctx.getType() !== 'http') return true;
    if (isPublicRoute(ctx.getHandler(), ctx.getClass())) return true;
    const req = ctx.switchToHttp().getRequest<Request>();
    const agent = agentOfRoute(ctx.getClass(), req);
    // Named before authenticating, so the authenticator's own lines carry the agent too.
    if (agent) req.logContext?.set({ agent: agent.source });
    let principal: MaybeAsync<Principal>;
    try {
      principal = this.authenticator.authenticate(req, agentAccessOverride(agent));
    } catch (err) {
      this.refuse(req, agent, err);
    }
    return thenOrNow(
      principal,
      (caller) => admit(req, caller),
      (err) => this.refuse(req, agent, err),
    );
  }

  private refuse(req: Request, agent: AgentDefinition | undefined, err: unknown): never {
    // Guards run before the interceptor enters the request's async context: its ids are passed as they are.
    auditRefusal(this.audit, { ...req.logContext?.fields, http_request_id: req.requestId, agent: agent?.source }, err);
    throw err;
  }
}

function admit(req: Request, principal: Principal): true {
  req.principal = principal;
  // Every later line of the request names its caller (the oid hashed once per request: here, unless the authenticator did).
  if (req.logContext && !req.logContext.fields.oid_hash) req.logContext.set(callerFields(principal));
  return true;
}

/**
 * Audits a refused caller (401/403): its reason, who its token claims to be (unverified, GUIDs
 * only) and, when the token was genuine, its tenant; never the token. An unreachable identity
 * provider (503) is no refusal. `ids`: the request's log fields.
 */
export function auditRefusal(audit: AuditLog, ids: LogFields, err: unknown): void {
  if (!(err instanceof DomainError) || (err.code !== ErrorCode.UNAUTHENTICATED && err.code !== ErrorCode.FORBIDDEN)) return;
  audit.record('auth.failed', { ...ids, tid: refusedTenantOf(err), ...claimedIdentityOf(err), code: err.code, reason: err.message });
}

/** `spec.auth` of the agent whose route this is (validated at boot by auth.schema.ts). */
export function agentAccessOverride(agent: AgentDefinition | undefined): AccessPolicyOverride | undefined {
  return agent?.config.spec.auth;
}
