import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';

/** Deepest nesting of objects and arrays a JSON body (or WebSocket message) may have. */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * The nesting depth of a JSON text, read once byte by byte before it is parsed: linear in its size
 * (which TA_MAX_BODY_BYTES bounds) and stopped at the first level over `max`. Brackets inside
 * strings do not count. Malformed text is left for the parser to refuse.
 */
export function jsonDepthExceeds(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** Throws 422 VALIDATION_FAILED when the JSON text nests deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(text: Uint8Array | string, field = 'body'): void {
  if (!jsonDepthExceeds(text)) return;
  const message = `JSON nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`;
  throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
}

/** body-parser's `verify` hook: runs on the raw body before it is parsed. */
export function verifyJsonDepth(_req: unknown, _res: unknown, buf: Buffer): void {
  checkJsonDepth(buf);
}
