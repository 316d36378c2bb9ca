import type { Request } from 'express';
import type { EnvConfig } from '../../config/env.config';

/** RFC 9728's well-known path, to which a resource's path is appended. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/**
 * The OAuth 2.0 Protected Resource Metadata (RFC 9728) of `resource` (an MCP endpoint's URL, or the
 * server's origin for the document at the root), as the MCP authorization specification asks: the
 * Entra authority that issues its tokens (the issuer whose OpenID configuration the server reads)
 * and the scopes a token needs. Without TA_ENTRA_TENANT_ID (a multi-tenant app) it names `organizations`,
 * as the server's own metadata URL does (src/auth/entra/entra.options.ts).
 */
export function protectedResourceMetadata(resource: string, auth: EnvConfig['auth'], name?: string) {
  const scopes = scopesOf(auth);
  return {
    resource,
    authorization_servers: [`${auth.authority}/${auth.tenantId ?? 'organizations'}/v2.0`],
    ...(scopes.length ? { scopes_supported: scopes } : {}),
    bearer_methods_supported: ['header'],
    ...(name ? { resource_name: name } : {}),
  };
}

/**
 * The scopes a client asks Entra for: each of TA_ENTRA_REQUIRED_SCOPES under the App ID URI (Entra
 * wants `api://…/scope`), or `{App ID URI}/.default` when only app roles are required.
 */
function scopesOf(auth: EnvConfig['auth']): string[] {
  const audience = auth.audiences[0];
  if (!audience) return auth.requiredScopes;
  const api = audience.includes('://') ? audience : `api://${audience}`;
  if (!auth.requiredScopes.length) return [`${api}/.default`];
  return auth.requiredScopes.map((s) => (s.includes('://') ? s : `${api}/${s}`));
}

/** Where the metadata of the resource at `path` is (RFC 9728 §3.1: the well-known path, then the resource's path). */
export function protectedResourceMetadataUrl(origin: string, path: string): string {
  return `${origin}${PROTECTED_RESOURCE_PATH}${path === '/' ? '' : path}`;
}

/**
 * The origin clients reach this server at: the request's scheme and host, or what a reverse proxy
 * says of them (`X-Forwarded-Proto`, `X-Forwarded-Host`, first value), since TLS usually ends there.
 */
export function publicOrigin(req: Pick<Request, 'protocol'> & { header(name: string): string | undefined }): string {
  const first = (v: string | undefined) => v?.split(',')[0]!.trim() || undefined;
  const proto = first(req.header('x-forwarded-proto')) ?? req.protocol;
  const host = first(req.header('x-forwarded-host')) ?? req.header('host') ?? 'localhost';
  return `${proto}://${host}`;
}
