import { hash } from 'node:crypto';
import type { CryptoKey } from 'jose';
import type { EntraIdentity } from './entra-identity';

/** What one successful validation established, and what it depended on. */
export interface ValidatedToken {
  identity: EntraIdentity;
  /** The key that verified the signature: a hit counts only while the key source still has it. */
  kid: string;
  key: CryptoKey;
  /** `exp` + the clock skew, in ms: after this jose would refuse the token, so the cache must too. */
  acceptedUntilMs: number;
}

/** Clients send one token for its whole life (about an hour): thousands of callers fit in a few MB. */
export const VALIDATED_TOKEN_CACHE_ENTRIES = 10_000;

/**
 * Tokens that passed validation, by their digest (SHA-256, `tokenDigest`), so that a client sending the same token
 * again costs a hash and a lookup instead of an RS256 signature check (measured at about 15 % of a
 * plain turn's CPU; bench/, issue 14). Only successes are kept, never refusals; an entry lasts
 * until the token would expire anyway; the count is bounded (the oldest entry goes first). The
 * hash, not the token, is the key, so a heap dump does not hold usable bearer tokens here.
 */
export class ValidatedTokenCache {
  private readonly entries = new Map<string, ValidatedToken>();

  constructor(private readonly maxEntries = VALIDATED_TOKEN_CACHE_ENTRIES) {}

  get size(): number {
    return this.entries.size;
  }

  /** The entry for the token of this digest, unless it has expired by `nowMs` (an expired one is dropped). */
  get(digest: string, nowMs: number): ValidatedToken | undefined {
    const entry = this.entries.get(digest);
    if (entry && nowMs >= entry.acceptedUntilMs) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry;
  }

  set(digest: string, entry: ValidatedToken): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(digest);
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, entry);
  }

  /** Forgets the token of this digest (its key is gone: the next use must be verified, and may be refused). */
  delete(digest: string): void {
    this.entries.delete(digest);
  }
}

/** A token's cache key. One-shot crypto.hash: no Hash object per request (it showed in the Entra profile, issue 14). */
export const tokenDigest = (token: string): string => hash('sha256', token, 'base64url');
