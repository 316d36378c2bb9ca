import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';
import { CORS_ALLOW_HEADERS, CORS_ALLOW_METHODS, CORS_DEV_HEADERS, CORS_EXPOSE_HEADERS, CORS_MAX_AGE_SECONDS, CorsConfig } from './cors-policy';

/**
 * CORS for every route, registered before routing, authentication and the 415 check:
 * - a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin
 *   is answered here, 204, whatever the path (an unknown route, `/stream`, an `/sse` route alike);
 *   from any other origin it is 403 `CORS_ORIGIN_NOT_ALLOWED` (problem+json, no CORS headers);
 * - any other request from an allowed origin gets `Access-Control-Allow-Origin` (and the exposed
 *   headers) set before its route runs, so its errors (401, 409, 415, ...) carry them too; a request
 *   from another origin is served as it would be without CORS (never refused: same-origin pages and
 *   non-browser callers send `Origin` too), and the browser keeps its answer from the script.
 * Never `Access-Control-Allow-Credentials`.
 */
export function corsMiddleware(cors: CorsConfig, options: { devAuth: boolean }) {
  const allowHeaders = [...CORS_ALLOW_HEADERS, ...(options.devAuth ? CORS_DEV_HEADERS : [])].join(', ');
  const allowMethods = CORS_ALLOW_METHODS.join(', ');
  const exposeHeaders = CORS_EXPOSE_HEADERS.join(', ');
  const allowed = new Set(cors.origins);
  const enabled = cors.anyOrigin || allowed.size > 0;
  const isAllowed = (origin: string) => cors.anyOrigin || allowed.has(origin);

  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    const preflight = req.method === 'OPTIONS' && origin !== undefined && req.headers['access-control-request-method'] !== undefined;
    // The answer depends on Origin whenever CORS is on (and a preflight's always).
    if (enabled || preflight) res.vary('Origin');
    if (!origin || !isAllowed(origin)) {
      if (!preflight) return next();
      const why = enabled ? 'it is not in TA_CORS_ORIGINS' : 'cross-origin calls are off (TA_CORS_ORIGINS is not set)';
      return next(new DomainError(ErrorCode.CORS_ORIGIN_NOT_ALLOWED, `Origin ${JSON.stringify(origin)} may not call this server from a browser: ${why}`));
    }
    res.setHeader('Access-Control-Allow-Origin', cors.anyOrigin ? '*' : origin);
    if (!preflight) {
      res.setHeader('Access-Control-Expose-Headers', exposeHeaders);
      return next();
    }
    res.vary('Access-Control-Request-Method');
    res.vary('Access-Control-Request-Headers');
    res.setHeader('Access-Control-Allow-Methods', allowMethods);
    res.setHeader('Access-Control-Allow-Headers', allowHeaders);
    res.setHeader('Access-Control-Max-Age', String(CORS_MAX_AGE_SECONDS));
    // Chromium's Private Network Access: a page on a public address calling this server on a private one.
    if (req.headers['access-control-request-private-network'] === 'true') res.setHeader('Access-Control-Allow-Private-Network', 'true');
    res.setHeader('Content-Length', '0');
    res.status(204).end();
  };
}
