import { CallHandler, Controller, ExecutionContext, Get, HttpException, INestApplication, Injectable, NestInterceptor, Sse } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express/adapters/express-adapter.js';
import { Module } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Observable, of } from 'rxjs';
import { map } from 'rxjs/operators';
import { PromiseInterceptor, usePromiseInterceptors } from './promise-interceptors';

const calls: string[] = [];
const scope = new AsyncLocalStorage<string>();

/** Records its promise path and its rxjs path, so a test sees which one Nest took. */
class Recording implements PromiseInterceptor {
  constructor(private readonly name: string) {}
  async aroundHandler(_ctx: ExecutionContext, next: () => Promise<unknown>): Promise<unknown> {
    calls.push(`${this.name}:before`);
    const value = await scope.run(this.name, next);
    calls.push(`${this.name}:after`);
    return value;
  }
  intercept(_ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    calls.push(`${this.name}:rxjs`);
    return next.handle();
  }
}

@Injectable()
class OuterInterceptor extends Recording {
  constructor() {
    super('outer');
  }
}

@Injectable()
class InnerInterceptor extends Recording {
  constructor() {
    super('inner');
  }
}

/** An interceptor of the usual kind (rxjs only). */
@Injectable()
class PlainInterceptor implements NestInterceptor {
  intercept(_ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    calls.push('plain:rxjs');
    return next.handle().pipe(map((v) => ({ wrapped: v })));
  }
}

@Controller()
class ProbeController {
  @Get('value')
  async value() {
    await new Promise((r) => setTimeout(r, 5));
    calls.push('handler');
    // The innermost interceptor's async context, across an await.
    return { scope: scope.getStore() ?? null };
  }

  @Get('fails')
  async fails() {
    await Promise.resolve();
    throw new HttpException({ detail: 'no' }, 418);
  }

  @Get('observable')
  observable() {
    return of({ from: 'observable' });
  }

  @Sse('events')
  events() {
    calls.push('sse-handler');
    return of({ data: 'one' });
  }
}

async function startApp(interceptors: NestInterceptor[]): Promise<{ app: INestApplication; url: string }> {
  @Module({ controllers: [ProbeController] })
  class ProbeModule {}
  const app = await NestFactory.create(ProbeModule, new ExpressAdapter(), { logger: false });
  app.useGlobalInterceptors(...interceptors);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}` };
}

describe('interceptors with promises, not rxjs (usePromiseInterceptors)', () => {
  let undo: () => void;
  beforeEach(() => {
    calls.length = 0;
    ({ undo } = usePromiseInterceptors());
  });
  afterEach(() => undo());

  it('runs promise interceptors in order around the handler, in their async context, without their rxjs path', async () => {
    const { app, url } = await startApp([new OuterInterceptor(), new InnerInterceptor()]);
    try {
      const res = await fetch(`${url}/value`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ scope: 'inner' });
      expect(calls).toEqual(['outer:before', 'inner:before', 'handler', 'inner:after', 'outer:after']);
    } finally {
      await app.close();
    }
  });

  it("hands a handler's rejection to the exception filters and its Observable to the response", async () => {
    const { app, url } = await startApp([new OuterInterceptor()]);
    try {
      const failed = await fetch(`${url}/fails`);
      expect(failed.status).toBe(418);
      expect(await failed.json()).toEqual({ detail: 'no' });
      const observed = await fetch(`${url}/observable`);
      expect(observed.status).toBe(200);
      expect(await observed.json()).toEqual({ from: 'observable' });
      expect(calls.filter((c) => c.endsWith(':rxjs'))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("leaves a list with an rxjs-only interceptor, and an @Sse() handler, to Nest's own chain", async () => {
    const { app, url } = await startApp([new OuterInterceptor(), new PlainInterceptor()]);
    try {
      const res = await fetch(`${url}/value`);
      expect(await res.json()).toEqual({ wrapped: { scope: null } });
      expect(calls).toEqual(['outer:rxjs', 'plain:rxjs', 'handler']);
    } finally {
      await app.close();
    }
    calls.length = 0;
    const sse = await startApp([new OuterInterceptor()]);
    try {
      const res = await fetch(`${sse.url}/events`);
      expect(await res.text()).toContain('data: one');
      expect(calls).toEqual(['outer:rxjs', 'sse-handler']);
    } finally {
      await sse.app.close();
    }
  });

  it("is Nest's rxjs chain again once undone (so the first case can fail)", async () => {
    undo();
    const { app, url } = await startApp([new OuterInterceptor()]);
    try {
      await (await fetch(`${url}/value`)).json();
      expect(calls).toEqual(['outer:rxjs', 'handler']);
    } finally {
      await app.close();
    }
  });
});
