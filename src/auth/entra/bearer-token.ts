import type { Request } from 'express';
import { invalidToken, missingBearerToken } from './entra-errors';

/** RFC 6750 §2.1: `Authorization: Bearer <b64token>`; the scheme name is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The raw token of the request, or a 401 (no challenge error when there is no Bearer credential at all). */
export function readBearerToken(req: Request): string {
  const header = req.headers.authorization;
  if (!header || !/^Bearer(\s|$)/i.test(header)) throw missingBearerToken();
  const match = BEARER.exec(header);
  if (!match) throw invalidToken('the token is not a well-formed JWT');
  return match[1]!;
}
