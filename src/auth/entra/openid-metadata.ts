import { identityProviderUnavailable } from './entra-errors';
import type { FetchJson } from './idp-fetch';

/** The fields of an OpenID Provider configuration document this server reads. */
export interface OpenIdMetadata {
  issuer: string;
  jwks_uri: string;
}

/**
 * The authority's discovery document (`{authority}/{tenant}/v2.0/.well-known/openid-configuration`),
 * fetched on first use and kept for `maxAgeMs` (and past it while a refresh fails). Only `jwks_uri` is used: Entra's v2 `issuer` for
 * the multi-tenant endpoints is a `{tenantid}` template, so the issuer a token must carry is
 * computed from its own `tid` (entra-issuers.ts) rather than read from here.
 */
export class OpenIdMetadataSource {
  private cached?: { value: OpenIdMetadata; at: number };
  private inflight?: Promise<OpenIdMetadata>;

  constructor(
    readonly url: string,
    private readonly fetchJson: FetchJson,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<OpenIdMetadata> {
    if (this.cached && this.now() - this.cached.at < this.maxAgeMs) return this.cached.value;
    // Concurrent first requests share one fetch.
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    try {
      return await this.inflight;
    } catch (err) {
      // A document we already have is still the best answer while the provider is unreachable.
      if (this.cached) return this.cached.value;
      throw err;
    }
  }

  private async load(): Promise<OpenIdMetadata> {
    const doc = (await this.fetchJson(this.url)) as Partial<OpenIdMetadata> | null;
    if (!doc || typeof doc.jwks_uri !== 'string' || !/^https?:\/\//.test(doc.jwks_uri)) {
      throw identityProviderUnavailable(new Error(`${this.url} has no usable jwks_uri`));
    }
    const value = { issuer: String(doc.issuer ?? ''), jwks_uri: doc.jwks_uri };
    this.cached = { value, at: this.now() };
    return value;
  }
}
