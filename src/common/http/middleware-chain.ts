import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Middlewares run one after another as one Express layer, each in the order given, as if each had
 * been registered with its own `app.use` at the root: a middleware that answers ends the chain, one
 * that calls `next(err)` (or throws, or returns a promise that rejects) hands the error to Express,
 * and the last one's `next()` goes on to the routes.
 *
 * Why one layer: Express's router walks its stack for every request, and each root `use` layer it
 * passes costs a match, a params step and a prefix trim (~0.7 KB of allocation and about a
 * microsecond each: issue 27, docs/performance.md). Six such layers ran before every route.
 */
export function middlewareChain(middlewares: readonly RequestHandler[]): RequestHandler {
  const list = [...middlewares];
  return (req: Request, res: Response, next: NextFunction): void => {
    let i = 0;
    const step = (err?: unknown): void => {
      // As Express's router reads a `use` layer's `next(err)`: nothing, or `'route'`, goes on; any other error (`'router'` too) is Express's.
      if (err && err !== 'route') return next(err);
      const mw = list[i++];
      if (!mw) return next();
      try {
        const ret = mw(req, res, step) as unknown;
        // Express 5 forwards a handler's rejected promise as its error: so does the chain.
        if (ret !== null && typeof ret === 'object' && typeof (ret as Promise<unknown>).then === 'function') {
          (ret as Promise<unknown>).then(undefined, (rejected: unknown) => next(rejected || new Error('Rejected promise')));
        }
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
}
