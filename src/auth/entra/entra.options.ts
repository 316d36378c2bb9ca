import type { EnvConfig } from '../../config/env.config';
import type { AccessPolicy } from '../access-policy';

/** Everything the Entra ID validation needs, derived once from the validated environment. */
export interface EntraOptions {
  /** `https://login.microsoftonline.com` (no trailing slash), or a local issuer in tests. */
  authority: string;
  /** `{authority}/{tenant}/v2.0/.well-known/openid-configuration` */
  metadataUrl: string;
  /** Accepted `aud` values: the app's client id and/or its `api://` App ID URI. */
  audiences: string[];
  /** Accepted `tid` values. */
  allowedTenants: string[];
  /** The server-wide policy; an agent's `spec.auth` may override it. */
  access: AccessPolicy;
  clockSkewSeconds: number;
  jwksCooldownMs: number;
  idpTimeoutMs: number;
  /** How long metadata and keys are kept before a refresh (Entra advises about a day). */
  cacheMaxAgeMs: number;
}

export const KEY_CACHE_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * API.md §6: metadata comes from the configured tenant, or `organizations` for a multi-tenant app
 * (Entra signs every tenant's tokens with the same keys). Tokens are accepted from
 * TA_ENTRA_ALLOWED_TENANTS when set (the complete list), else from TA_ENTRA_TENANT_ID alone.
 */
export function entraOptionsFrom(auth: EnvConfig['auth']): EntraOptions {
  const tenant = auth.tenantId ?? 'organizations';
  return {
    authority: auth.authority,
    metadataUrl: `${auth.authority}/${tenant}/v2.0/.well-known/openid-configuration`,
    audiences: auth.audiences,
    allowedTenants: auth.allowedTenants.length ? auth.allowedTenants : auth.tenantId ? [auth.tenantId] : [],
    access: { requiredScopes: auth.requiredScopes, requiredRoles: auth.requiredRoles },
    clockSkewSeconds: auth.clockSkewSeconds,
    jwksCooldownMs: auth.jwksCooldownMs,
    idpTimeoutMs: auth.idpTimeoutMs,
    cacheMaxAgeMs: KEY_CACHE_MAX_AGE_MS,
  };
}
