import type { ExecutionContext, NestInterceptor } from '@nestjs/common';
import { SSE_METADATA } from '@nestjs/common/constants.js';
// Nest's own consumer class, the one its router and external contexts instantiate (the module Nest
// itself imports, so the same class object).
import { InterceptorsConsumer } from '@nestjs/core/interceptors/interceptors-consumer.js';
import { routeMetadata } from './route-metadata';

/**
 * An interceptor that can also wrap a handler with promises: `aroundHandler(ctx, next)` calls
 * `next()` (the handler, or the next interceptor) at most once and resolves to what the response
 * is made of, or rejects with what the exception filters see. `intercept` stays for a consumer
 * without the promise path (a test's bare Nest app).
 */
export interface PromiseInterceptor extends NestInterceptor {
  aroundHandler(ctx: ExecutionContext, next: () => Promise<unknown>): Promise<unknown>;
}

function isPromiseInterceptor(i: NestInterceptor): i is PromiseInterceptor {
  return typeof (i as Partial<PromiseInterceptor>).aroundHandler === 'function';
}

type Intercept = InterceptorsConsumer['intercept'];
let original: Intercept | undefined;

/**
 * Runs a route's interceptors without rxjs when every one of them is a `PromiseInterceptor`, as our
 * one telemetry interceptor is; any other list (and an `@Sse()` handler, whose response must be an
 * Observable) goes through Nest's own consumer unchanged.
 *
 * Why: with any interceptor at all, Nest builds each request an rxjs chain (two `defer`s, two
 * `mergeAll`s, an Observable around the handler's promise, `from`, then `lastValueFrom` to read it
 * back) and binds two async resources: 12 KB of rxjs objects and ~16 % of all a v3 turn allocates
 * (145 → 122 KB, `BENCH_ENTRY=alloc npm run bench`, issue 27). The promise path keeps what the
 * chain means: interceptors run in order around the handler, in the caller's async context (`next`
 * is called synchronously, so AsyncLocalStorage needs no binding), a rejection reaches the
 * exception filters, and a handler's Observable is handed back as it is, which Nest's response step
 * reads (and tears down on disconnect) exactly as the rxjs chain's. Idempotent; `undo` restores
 * Nest's consumer (tests).
 */
export function usePromiseInterceptors(): { undo(): void } {
  if (!original) {
    const nest = InterceptorsConsumer.prototype.intercept;
    original = nest;
    InterceptorsConsumer.prototype.intercept = function (this: InterceptorsConsumer, interceptors, args, instance, callback, next, type) {
      if (!interceptors?.length || !interceptors.every(isPromiseInterceptor) || routeMetadata(SSE_METADATA, callback)) {
        return nest.call(this, interceptors, args, instance, callback, next, type) as Promise<unknown>;
      }
      const ctx = this.createContext(args, instance, callback);
      if (type) ctx.setType(type);
      const promised = interceptors as PromiseInterceptor[];
      const around = (i: number): Promise<unknown> => (i === promised.length ? next() : promised[i]!.aroundHandler(ctx, () => around(i + 1)));
      return around(0);
    } as Intercept;
  }
  return {
    undo() {
      if (original) InterceptorsConsumer.prototype.intercept = original;
      original = undefined;
    },
  };
}
