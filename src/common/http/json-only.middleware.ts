import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i;

/**
 * A request that carries a body must say it is JSON (`application/json` or `...+json`): anything
 * else is 415 before any route runs, rather than an empty body reaching validation.
 */
export function jsonOnlyMiddleware(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || ['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(req.method)) return next();
  const type = req.headers['content-type'] ?? '';
  if (!JSON_TYPE.test(type)) {
    return next(
      new DomainError(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        `Content-Type must be application/json (got ${type ? JSON.stringify(type.split(';')[0]) : 'none'})`,
      ),
    );
  }
  next();
}
