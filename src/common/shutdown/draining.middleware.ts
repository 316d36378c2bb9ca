import type { NextFunction, Request, Response } from 'express';
import { shuttingDown, ShutdownStateService } from './shutdown-state.service';

/** Health probes still answer while draining: readiness says 503 (draining), liveness 200. */
const HEALTH_PATH = /(^|\/)health(\/live|\/ready)?\/?$/;

/**
 * Counts every HTTP request in flight (the drain waits for them) and, once the replica drains, answers
 * a new one 503 SHUTTING_DOWN with `Connection: close`: the listener is already closed, so such a
 * request can only come on a kept-alive connection, which the client should reopen elsewhere.
 */
export function drainingMiddleware(state: ShutdownStateService) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (state.draining) {
      // Every answer while draining closes its connection, so kept-alive ones wind down.
      res.setHeader('Connection', 'close');
      if (HEALTH_PATH.test(req.path)) return next();
      return next(shuttingDown('The server is shutting down: retry on another replica'));
    }
    res.once('close', state.enter());
    next();
  };
}
