import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';

/** Longest cursor accepted (the ones this API issues are far shorter; a DynamoDB key is at most 1 KiB). */
export const MAX_CURSOR_CHARS = 512;

/**
 * Checks a client's `cursor` before any store sees it, the same on every backend: every cursor this
 * API issues is canonical base64url of printable ASCII, at most MAX_CURSOR_CHARS long. Anything else
 * (`!!!`, padding, an empty or binary position) is 422 INVALID_CURSOR rather than a store error.
 * Returns the decoded position.
 */
export function checkCursor(cursor: string): string {
  const ok =
    cursor.length > 0 &&
    cursor.length <= MAX_CURSOR_CHARS &&
    /^[A-Za-z0-9_-]+$/.test(cursor) &&
    Buffer.from(cursor, 'base64url').toString('base64url') === cursor;
  const decoded = ok ? Buffer.from(cursor, 'base64url').toString('latin1') : '';
  if (!ok || !/^[\x20-\x7e]+$/.test(decoded)) throw invalidCursor();
  return decoded;
}

export function invalidCursor(): DomainError {
  const message = 'cursor is not one this API issued';
  return new DomainError(ErrorCode.INVALID_CURSOR, message, { errors: [{ field: 'cursor', message }] });
}
