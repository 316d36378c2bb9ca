import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i;

/**
 * Whether a body is read as JSON: `application/json`, `...+json`, or no `Content-Type` at all. The
 * last is what upstream's FastAPI does, and what upstream's own callers rely on: the Assistant
 * orchestrator's recipient chooser and the Workflow orchestrator's invoker post JSON with python
 * `requests.post(data=...)`, which sends no content type.
 */
export function readsAsJson(contentType: string | undefined): boolean {
  return !contentType?.trim() || JSON_TYPE.test(contentType);
}

/**
 * A request that carries a body with another content type (`text/plain`, a form, ...) is 415
 * before any route runs, rather than an empty body reaching validation.
 */
export function jsonOnlyMiddleware(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || ['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(req.method)) return next();
  const type = req.headers['content-type'];
  if (!readsAsJson(type)) {
    return next(
      new DomainError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Content-Type must be application/json or absent (got ${JSON.stringify(type!.split(';')[0])})`),
    );
  }
  next();
}
