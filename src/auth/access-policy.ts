/**
 * What a valid token must also carry to reach a route (API.md §4). Delegated tokens (a user, via
 * an app) are checked against `requiredScopes` (the `scp` claim), app-only tokens (an
 * orchestrator acting as itself, client credentials) against `requiredRoles` (the `roles` claim).
 * Any one listed value is enough. An empty list refuses that kind of token: fail closed, so an API
 * configured for orchestrators only does not silently accept user tokens.
 */
export interface AccessPolicy {
  requiredScopes: string[];
  requiredRoles: string[];
}

/** An agent's `spec.auth`: each list given replaces the server-wide one for that agent's routes. */
export interface AccessPolicyOverride {
  required_scopes?: string[];
  required_roles?: string[];
}

export function applyOverride(base: AccessPolicy, override: AccessPolicyOverride | undefined): AccessPolicy {
  if (!override) return base;
  return {
    requiredScopes: override.required_scopes ?? base.requiredScopes,
    requiredRoles: override.required_roles ?? base.requiredRoles,
  };
}
