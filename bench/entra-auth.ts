import { randomUUID } from 'node:crypto';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../test/support/oidc-issuer';

/** How a subject authenticates: the server's env and the headers each turn sends. */
export interface BenchAuth {
  /** Shown beside the subject's name ("entra"). */
  name: string;
  env: Record<string, string>;
  /** The headers of the next request. */
  headers: () => Record<string, string>;
}

export interface EntraBenchAuth extends BenchAuth {
  /** Requests the server made to the identity provider so far (metadata, keys): 1 + 1 once cached. */
  idpRequests: () => { metadata: number; jwks: number };
  stop: () => Promise<void>;
}

/** Tokens minted once and sent in turn: a few distinct tokens, as several clients of one user have. */
const TOKENS = 4;

/**
 * Entra ID auth for the benchmark: the tests' local OpenID issuer (discovery + JWKS, RS256, tokens
 * shaped like Entra's), `TOKENS` delegated v2.0 tokens for one user minted once, and the env that
 * points our server at it. The server fetches metadata and keys on its first request and caches
 * them, so the figures are those of a token check with cached keys, as in production.
 */
export async function startEntraAuth(): Promise<EntraBenchAuth> {
  const issuer: OidcIssuer = await startOidcIssuer();
  // One user (same tid and oid), so any token may continue any conversation: the owner check passes.
  const oid = randomUUID();
  const tokens = await Promise.all(Array.from({ length: TOKENS }, () => issuer.mint({ oid, expiresIn: 6 * 3600 })));
  let next = 0;
  return {
    name: 'entra',
    env: entraEnv(issuer),
    headers: () => ({ authorization: `Bearer ${tokens[next++ % TOKENS]}` }),
    idpRequests: () => ({ metadata: issuer.counts.metadata, jwks: issuer.counts.jwks }),
    stop: () => issuer.close(),
  };
}
