import type { Request } from 'express';
import { Authenticator } from './authenticator';
import { DEV_OWNER_ID, DEV_TENANT_ID, Principal } from './principal';

const SAFE_USER = /^[A-Za-z0-9._@-]{1,128}$/;

/**
 * `TA_AUTH_MODE=dev`: everyone is the development identity. `X-Dev-User: alice` picks another
 * owner id in the same development tenant, to try ownership rules with two users by hand, and
 * `X-Dev-Roles: Agents.Audit,Agents.Admin` app roles (the audit archive's readers and erasure).
 */
export class DevAuthenticator extends Authenticator {
  authenticate(req: Request): Principal {
    const roles = req.header('x-dev-roles');
    if (roles)
      req.roles = roles
        .split(',')
        .map((r) => r.trim())
        .filter((r) => SAFE_USER.test(r));
    const user = req.header('x-dev-user');
    return { tenantId: DEV_TENANT_ID, ownerId: user && SAFE_USER.test(user) ? user : DEV_OWNER_ID };
  }
}
