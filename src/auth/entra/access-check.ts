import type { AccessPolicy } from '../access-policy';
import { insufficientAccess } from './entra-errors';
import type { EntraIdentity } from './entra-identity';

/**
 * Authorization after validation: a delegated token needs one of the required scopes in `scp`, an
 * app-only token one of the required app roles in `roles`. A user's token never passes on roles
 * alone, and an app's never on scopes: the two kinds are granted in different places (user
 * consent vs. admin-assigned app roles), so mixing them would let one stand in for the other.
 */
export function checkAccess(identity: EntraIdentity, policy: AccessPolicy): void {
  if (identity.kind === 'delegated') {
    if (!policy.requiredScopes.some((s) => identity.scopes.includes(s))) throw insufficientAccess('scope', policy.requiredScopes);
  } else if (!policy.requiredRoles.some((r) => identity.roles.includes(r))) {
    throw insufficientAccess('role', policy.requiredRoles);
  }
}
