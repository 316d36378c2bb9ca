import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { middlewareChain } from './middleware-chain';

/** Runs the chain once; resolves with what it handed to Express's `next` (undefined: went on to the routes). */
function run(chain: RequestHandler): Promise<{ called: boolean; err: unknown }> {
  return new Promise((resolve) => {
    const next = ((err?: unknown) => resolve({ called: true, err })) as NextFunction;
    chain({} as Request, {} as Response, next);
    // A chain that ends without calling next (a middleware answered) resolves here.
    setTimeout(() => resolve({ called: false, err: undefined }), 20);
  });
}

describe('middlewareChain', () => {
  it('runs each middleware in order, then goes on to the routes', async () => {
    const order: string[] = [];
    const mw =
      (name: string): RequestHandler =>
      (_req, _res, next) => {
        order.push(name);
        next();
      };
    expect(await run(middlewareChain([mw('a'), mw('b'), mw('c')]))).toEqual({ called: true, err: undefined });
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('waits for a middleware that calls next later (a body being read)', async () => {
    const order: string[] = [];
    const later: RequestHandler = (_req, _res, next) => void setImmediate(() => (order.push('later'), next()));
    const after: RequestHandler = (_req, _res, next) => (order.push('after'), next());
    expect(await run(middlewareChain([later, after]))).toEqual({ called: true, err: undefined });
    expect(order).toEqual(['later', 'after']);
  });

  it('stops at a middleware that answers: the later ones and the routes never run', async () => {
    let reached = false;
    const answers: RequestHandler = () => undefined;
    const later: RequestHandler = (_req, _res, next) => ((reached = true), next());
    expect(await run(middlewareChain([answers, later]))).toEqual({ called: false, err: undefined });
    expect(reached).toBe(false);
  });

  it("hands an error to Express: passed to next, thrown, or a rejected promise's, and runs nothing after it", async () => {
    const boom = new Error('boom');
    let reached = false;
    const later: RequestHandler = (_req, _res, next) => ((reached = true), next());
    expect(await run(middlewareChain([(_req, _res, next) => next(boom), later]))).toEqual({ called: true, err: boom });
    expect(
      await run(
        middlewareChain([
          () => {
            throw boom;
          },
          later,
        ]),
      ),
    ).toEqual({ called: true, err: boom });
    expect(await run(middlewareChain([() => Promise.reject(boom), later]))).toEqual({ called: true, err: boom });
    expect(reached).toBe(false);
  });

  it("reads next's argument as Express reads a root layer's: a falsy one or 'route' goes on, 'router' leaves", async () => {
    const order: string[] = [];
    const passes =
      (name: string, arg: unknown): RequestHandler =>
      (_req, _res, next) => {
        order.push(name);
        next(arg as string);
      };
    const last: RequestHandler = (_req, _res, next) => (order.push('last'), next());
    expect(await run(middlewareChain([passes('empty', ''), passes('route', 'route'), last]))).toEqual({ called: true, err: undefined });
    expect(order).toEqual(['empty', 'route', 'last']);
    order.length = 0;
    expect(await run(middlewareChain([passes('router', 'router'), last]))).toEqual({ called: true, err: 'router' });
    expect(order).toEqual(['router']);
  });

  it('gives each request its own walk through the chain', async () => {
    const seen: number[] = [];
    let n = 0;
    const count: RequestHandler = (_req, _res, next) => (seen.push(++n), next());
    const chain = middlewareChain([count, count]);
    await Promise.all([run(chain), run(chain)]);
    expect(seen).toEqual([1, 2, 3, 4]);
  });
});
