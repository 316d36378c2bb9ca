import type { Request } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { invalidToken, missingBearerToken } from './entra-errors';
import { tokenDigest } from './validated-token.cache';

/** RFC 6750 §2.1: `Authorization: Bearer <b64token>`; the scheme name is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** A bearer token as read from a request, with its digest (the validated-token cache's key). */
export interface BearerToken {
  readonly token: string;
  readonly digest: string;
}

/** The Authorization header a BearerToken was read from, as bytes (what a connection remembers). */
interface ReadHeader extends BearerToken {
  readonly header: Buffer;
}

/**
 * How many distinct Authorization headers one connection remembers. A client sends the same token
 * for about an hour, and an orchestrator may relay a few callers' tokens over one pooled
 * connection. Each header is at most Node's header size limit; they go with the connection.
 */
export const BEARER_HEADERS_PER_CONNECTION = 4;

const READ_ON_CONNECTION = Symbol('bearer tokens read on this connection');

type Connection = { [READ_ON_CONNECTION]?: ReadHeader[] };

/**
 * The raw token of the request and its digest, or a 401 (no challenge error when there is no
 * Bearer credential at all). A header this connection sent before is answered from the connection,
 * so a client's next request costs neither the pattern nor the SHA-256, which was most of an Entra
 * turn's extra CPU (issue 27). Compared whole and in constant time (`timingSafeEqual`): behind a
 * proxy that pools connections, one connection carries several callers' headers, and a comparison
 * that stops at the first differing byte would time how much of another caller's token a guess
 * shares. Raw tokens are thus kept as long as the connection that sent them is open, and no longer.
 */
export function readBearerToken(req: Request): BearerToken {
  const header = req.headers.authorization;
  const connection = req.socket as Connection | undefined;
  const seen = connection?.[READ_ON_CONNECTION];
  let bytes: Buffer | undefined;
  if (seen !== undefined && header !== undefined) {
    bytes = Buffer.from(header, 'latin1');
    for (const read of seen) if (read.header.length === bytes.length && timingSafeEqual(read.header, bytes)) return read;
  }
  if (!header || !/^Bearer(\s|$)/i.test(header)) throw missingBearerToken();
  const match = BEARER.exec(header);
  if (!match) throw invalidToken('the token is not a well-formed JWT');
  const token = match[1]!;
  if (!connection) return { token, digest: tokenDigest(token) };
  // A buffer of its own: a slice of Node's shared pool would keep the whole 8 KiB pool alive.
  const remembered = Buffer.allocUnsafeSlow(header.length);
  remembered.write(header, 'latin1');
  const read: ReadHeader = { header: remembered, token, digest: tokenDigest(token) };
  // Newest first; the oldest goes once the connection has sent more distinct headers than it keeps.
  const kept = (connection[READ_ON_CONNECTION] ??= []);
  kept.unshift(read);
  if (kept.length > BEARER_HEADERS_PER_CONNECTION) kept.pop();
  return read;
}
