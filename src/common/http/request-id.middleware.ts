import type { NextFunction, Request, Response } from 'express';
import { newUuid } from '../ids/uuid.util';

declare module 'express-serve-static-core' {
  interface Request {
    requestId?: string;
  }
}

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's `X-Request-Id` when it is sane, else a new one. */
export function requestIdFor(given: string | undefined): string {
  return given && SAFE_ID.test(given) ? given : newUuid();
}

/** Correlation id: the caller's `X-Request-Id` when it is sane, else a new one; echoed back. */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  req.requestId = requestIdFor(req.header('x-request-id'));
  res.setHeader('X-Request-Id', req.requestId);
  next();
}
