import type { NextFunction, Request, Response } from 'express';
import { checkJsonDepth } from './json-depth';

/**
 * The body of a plain JSON request (`application/json` or no type, UTF-8, not compressed, with a
 * content-length within the limit), read and parsed here; every other request body is left to the
 * body parser registered after this (body-parser's `json`), which sees the body consumed and skips.
 *
 * Why: body-parser reads each body through raw-body, type-is, content-type, iconv-lite and a
 * debug-wrapped pipeline; on a v3 turn that was ~4 % of the server's CPU (`npm run bench`'s
 * profile, issue 27). What it does that this does not (gzip/deflate/br bodies, charsets other than
 * UTF-8, `+json` types, chunked bodies) it still does. What this does, it does as body-parser
 * does: the limit (413 `entity.too.large`), the depth check on the raw bytes (the same `verify`),
 * a leading BOM dropped, strict JSON (an object or an array; an empty body is `{}`), and errors
 * of the same `type` and `status`, so the one filter maps them alike (to-domain-error.ts).
 */
export function jsonBodyMiddleware(limit: number): (req: Request, res: Response, next: NextFunction) => void {
  return (req, _res, next) => {
    const length = plainJsonLength(req, limit);
    if (length === undefined) return next();
    readBody(req, length, (err, body) => {
      if (err) return next(err);
      try {
        checkJsonDepth(body!);
        req.body = parseStrict(body!);
      } catch (e) {
        return next(e);
      }
      next();
    });
  };
}

/** `application/json` (any case), optionally with `charset=utf-8`, and nothing else. */
const PLAIN_JSON_TYPE = /^\s*application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/** The declared length of a body this middleware reads, or undefined when body-parser is to read it. */
function plainJsonLength(req: Request, limit: number): number | undefined {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined || req.readableEnded) return undefined;
  const declared = headers['content-length'];
  if (declared === undefined) return undefined;
  const type = headers['content-type'];
  if (type !== undefined && type.trim() !== '' && !PLAIN_JSON_TYPE.test(type)) return undefined;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return undefined;
  const length = Number(declared);
  // Over the limit: body-parser answers it (413, the body drained) exactly as before.
  return Number.isSafeInteger(length) && length >= 0 && length <= limit ? length : undefined;
}

/** Errors shaped as body-parser's (http-errors: `status`, `type`, `expose`). */
function bodyError(message: string, status: number, type: string, cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { status, statusCode: status, type, expose: status < 500 });
}

/** The whole body (Node's parser delivers exactly content-length bytes, or the request aborts). */
function readBody(req: Request, length: number, done: (err: Error | undefined, body?: Buffer) => void): void {
  if (length === 0) return done(undefined, Buffer.alloc(0));
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (err: Error | undefined, body?: Buffer) => {
    if (settled) return;
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
    done(err, body);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > length) return settle(bodyError('request size did not match content length', 400, 'request.size.invalid'));
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (received !== length) return settle(bodyError('request size did not match content length', 400, 'request.size.invalid'));
    settle(undefined, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
  };
  const onError = (err: Error) => settle(bodyError('request aborted', 400, 'request.aborted', err));
  const onClose = () => settle(bodyError('request aborted', 400, 'request.aborted'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}

/** Whether the first character that is not JSON whitespace (space, tab, LF, CR) is `{` or `[`. */
function startsAsObjectOrArray(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return c === 0x7b || c === 0x5b;
  }
  return false;
}

/** body-parser's strict JSON: an empty body is `{}`; otherwise an object or an array, nothing else. */
function parseStrict(body: Buffer): unknown {
  let text = body.toString('utf8');
  // iconv-lite (body-parser's decoder) drops a leading byte order mark.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  if (!startsAsObjectOrArray(text)) throw bodyError('a JSON object or array is expected', 400, 'entity.parse.failed');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw bodyError((err as Error).message, 400, 'entity.parse.failed', err);
  }
}
