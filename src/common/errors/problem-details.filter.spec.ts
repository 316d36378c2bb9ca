import {
  BadRequestException,
  Controller,
  ForbiddenException,
  Get,
  HttpException,
  Module,
  NotFoundException,
  Param,
  Post,
  Res,
  UnauthorizedException,
} from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Response } from 'express';
import { Writable } from 'node:stream';
import { createLogger } from '../logging/logger';
import { SseStream } from '../sse/sse-stream';
import { DomainError } from './domain-error';
import { ErrorCode } from './error-code';
import { ERROR_STATUS } from './error-status';
import { ProblemDetailsFilter } from './problem-details.filter';

/** Routes that throw on purpose; the filter is mounted exactly as the app mounts it (APP_FILTER). */
@Controller()
class ThrowingController {
  @Get('domain/:code')
  domain(@Param('code') code: ErrorCode): never {
    throw new DomainError(code, `thrown ${code}`, { cause: new Error('the original cause') });
  }

  @Get('rich')
  rich(): never {
    throw new DomainError(ErrorCode.LLM_RATE_LIMITED, 'slow down', {
      retryAfter: 2.4,
      headers: { 'WWW-Authenticate': 'Bearer error="x"' },
      errors: [{ field: 'a.b', message: 'bad' }],
    });
  }

  @Get('http/:status')
  http(@Param('status') status: string): never {
    const exceptions: Record<string, HttpException> = {
      '400': new BadRequestException('Validation failed (uuid is expected)'),
      '401': new UnauthorizedException('no token'),
      '403': new ForbiddenException('no scope'),
      '404': new NotFoundException('gone'),
      '418': new HttpException('teapot', 418),
    };
    throw exceptions[status]!;
  }

  @Get('bug')
  bug(): never {
    throw new RangeError('index 7 out of range in secret internals');
  }

  @Get('thrown-string')
  thrownString(): never {
    throw 'a string, not an Error';
  }

  @Post('sse')
  async sse(@Res() res: Response): Promise<void> {
    const stream = new SseStream(res, 0);
    stream.open();
    stream.send('partial-response', { output_partial: 'Hel' });
    await Promise.resolve();
    throw new DomainError(ErrorCode.LLM_TIMEOUT, 'the model took too long');
  }

  @Get('half-written')
  halfWritten(@Res() res: Response): never {
    res.status(200).type('text/plain');
    res.write('partial');
    throw new Error('late failure');
  }
}

describe('ProblemDetailsFilter (mounted in a minimal Nest app, over real HTTP)', () => {
  let app: NestExpressApplication;
  let url: string;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _enc, cb) {
          for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
          cb();
        },
      }),
    );
    @Module({ controllers: [ThrowingController], providers: [{ provide: APP_FILTER, useValue: new ProblemDetailsFilter(logger) }] })
    class TestModule {}
    app = await NestFactory.create<NestExpressApplication>(TestModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(() => app.close());

  const get = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) };
  };

  it.each(Object.values(ErrorCode))('maps DomainError %s to its status, as application/problem+json', async (code) => {
    const res = await get(`/domain/${code}?x=1`);
    const { status, title } = ERROR_STATUS[code];
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      type: `urn:teal-agent-server:problem:${code.toLowerCase().replace(/_/g, '-')}`,
      title,
      status,
      instance: `/domain/${code}?x=1`,
      code,
    });
    if (code === ErrorCode.INTERNAL || code === ErrorCode.STATE_CORRUPT) {
      // A bug or unreadable state: the client gets an id to quote, the log gets the cause.
      expect(res.body.error_id).toMatch(/^[0-9a-f-]{36}$/);
      const logged = lines.find((l) => l.error_id === res.body.error_id);
      expect(logged).toMatchObject({ level: 'error', code, err: { message: 'the original cause' } });
    } else {
      expect(res.body.detail).toBe(`thrown ${code}`);
      expect(res.body.error_id).toBeUndefined();
    }
  });

  it('sends Retry-After (whole seconds, rounded up), extra headers and errors[]', async () => {
    const res = await get('/rich');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="x"');
    expect(res.body.errors).toEqual([{ field: 'a.b', message: 'bad' }]);
  });

  it.each([
    ['400', 422, 'VALIDATION_FAILED'],
    ['401', 401, 'UNAUTHENTICATED'],
    ['403', 403, 'FORBIDDEN'],
    ['404', 404, 'ROUTE_NOT_FOUND'],
  ])("maps Nest's HttpException %s to %s %s", async (thrown, status, code) => {
    const res = await get(`/http/${thrown}`);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(code);
  });

  it('maps an unknown route to a 404 problem', async () => {
    const res = await get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'ROUTE_NOT_FOUND', instance: '/no/such/route' });
  });

  it.each(['/bug', '/thrown-string', '/http/418'])(
    'answers anything unexpected (%s) with 500 INTERNAL, an error_id also in the log, and no internals',
    async (path) => {
      const res = await get(path);
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ code: 'INTERNAL', status: 500, title: 'Internal server error' });
      expect(res.body.detail).toContain(res.body.error_id);
      expect(JSON.stringify(res.body)).not.toMatch(/secret internals|a string, not an Error|teapot/);
      const logged = lines.filter((l) => l.error_id === res.body.error_id);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 'error', path, msg: 'unhandled error' });
      expect(JSON.stringify(logged[0])).toMatch(/secret internals|a string, not an Error|teapot/);
    },
  );

  it('turns an error after an SSE stream began into an `event: error` frame and ends the stream', async () => {
    const res = await fetch(`${url}/sse`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    expect(frames[0]).toBe('event: partial-response\ndata: {"output_partial":"Hel"}');
    expect(frames).toHaveLength(2);
    const [event, data] = frames[1]!.split('\n');
    expect(event).toBe('event: error');
    expect(JSON.parse(data!.replace(/^data: /, ''))).toMatchObject({ status: 504, code: 'LLM_TIMEOUT', detail: 'the model took too long' });
  });

  it('never sends a second response once headers went out: the client sees the body end', async () => {
    const res = await fetch(`${url}/half-written`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('partial');
    expect(lines.some((l) => (l.err as { message?: string } | undefined)?.message === 'late failure')).toBe(true);
  });
});
