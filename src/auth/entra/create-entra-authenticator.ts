import type { Logger } from 'pino';
import type { EnvConfig } from '../../config/env.config';
import { EntraAuthenticator } from './entra.authenticator';
import { entraOptionsFrom } from './entra.options';
import { EntraStrategy } from './entra.strategy';
import { EntraTokenValidator } from './entra-token.validator';
import { idpFetchJson } from './idp-fetch';
import { JwksCache } from './jwks-cache';
import { OpenIdMetadataSource } from './openid-metadata';

/**
 * Wires metadata → key cache → validator → passport strategy → Authenticator for one app. Nothing
 * is fetched here: the first request loads the metadata and keys, so the server starts (and
 * answers health checks) while the identity provider is unreachable, and requests get 503 meanwhile.
 */
export function createEntraAuthenticator(auth: EnvConfig['auth'], logger: Logger): EntraAuthenticator {
  const options = entraOptionsFrom(auth);
  const fetchJson = idpFetchJson(options.idpTimeoutMs);
  const metadata = new OpenIdMetadataSource(options.metadataUrl, fetchJson, options.cacheMaxAgeMs);
  const keys = new JwksCache(async () => fetchJson((await metadata.get()).jwks_uri), {
    cooldownMs: options.jwksCooldownMs,
    maxAgeMs: options.cacheMaxAgeMs,
  });
  const strategy = new EntraStrategy(new EntraTokenValidator(options, keys));
  logger.info(
    {
      authority: options.authority,
      metadata: options.metadataUrl,
      audiences: options.audiences,
      allowed_tenants: options.allowedTenants,
      required_scopes: options.access.requiredScopes,
      required_roles: options.access.requiredRoles,
    },
    'Entra ID bearer authentication enabled',
  );
  // Readiness names the cause: the 503 text a caller gets says nothing about why.
  const readiness = () =>
    keys.ready().catch((err: unknown) => {
      const cause = (err as { cause?: unknown }).cause ?? err;
      throw new Error(`metadata or signing keys not fetched from ${options.metadataUrl}: ${(cause as Error)?.message ?? String(cause)}`);
    });
  return new EntraAuthenticator(strategy, options.access, logger, readiness);
}
