import { Controller, Get, Head, Header, HttpCode, INestApplication, Module, Post, Res, StreamableFile } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express/adapters/express-adapter.js';
import type { Response } from 'express';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { JsonReplyExpressAdapter } from './json-reply.express-adapter';

const LONG = { text: 'é'.repeat(700), list: Array.from({ length: 50 }, (_, i) => ({ i, at: '2026-01-01T00:00:00.000Z' })) };

@Controller()
class ProbeController {
  @Post('small')
  @HttpCode(200)
  small() {
    return { task_id: 't', output: 'ok', extra_data: null, nested: { n: 1, list: [1, 'two'] } };
  }

  @Post('created')
  created() {
    return { id: 'new' };
  }

  @Get('long')
  long() {
    return LONG;
  }

  @Head('long')
  head() {
    return LONG;
  }

  @Get('typed')
  @Header('Content-Type', 'application/problem+json')
  typed() {
    return { type: 'about:blank', status: 200 };
  }

  @Get('etag')
  etag(@Res({ passthrough: true }) res: Response) {
    res.setHeader('ETag', '"v1"');
    return { tagged: true };
  }

  @Get('empty')
  @HttpCode(204)
  empty() {
    return { ignored: true };
  }

  @Get('text')
  text() {
    return 'plain';
  }

  @Get('file')
  file() {
    return new StreamableFile(Readable.from([Buffer.from('bytes')]));
  }

  @Get('to-json')
  toJson() {
    return { toJSON: () => ({ made: 'by toJSON' }) };
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

async function start(adapter: ExpressAdapter): Promise<{ app: INestApplication; port: number }> {
  const app = await NestFactory.create(ProbeModule, adapter, { logger: false });
  app.getHttpAdapter().getInstance().set('etag', false);
  await app.listen(0, '127.0.0.1');
  return { app, port: (app.getHttpServer().address() as { port: number }).port };
}

interface Raw {
  status: number;
  headers: string[];
  body: string;
}

/** The answer as sent: status, header lines in order (the date left out), body bytes as text. */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const lines: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i] !== 'Date') lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        resolve({ status: res.statusCode!, headers: lines, body: Buffer.concat(chunks).toString() });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('JsonReplyExpressAdapter', () => {
  let ours: { app: INestApplication; port: number };
  let express: { app: INestApplication; port: number };
  beforeAll(async () => {
    ours = await start(new JsonReplyExpressAdapter());
    express = await start(new ExpressAdapter());
  });
  afterAll(async () => {
    await ours.app.close();
    await express.app.close();
  });

  it.each([
    ['POST', '/small'],
    ['POST', '/created'],
    ['GET', '/long'],
    ['HEAD', '/long'],
    ['GET', '/typed'],
    ['GET', '/etag'],
    ['GET', '/empty'],
    ['GET', '/text'],
    ['GET', '/file'],
    ['GET', '/to-json'],
    ['GET', '/missing'],
  ])('answers %s %s with the very bytes and headers Express does', async (method, path) => {
    const mine = await send(ours.port, method, path);
    const theirs = await send(express.port, method, path);
    expect(mine).toEqual(theirs);
  });

  it('answers a fresh conditional GET as Express does (304 when the route set an ETag)', async () => {
    const mine = await send(ours.port, 'GET', '/etag', { 'if-none-match': '"v1"' });
    expect(mine.status).toBe(304);
    expect(mine).toEqual(await send(express.port, 'GET', '/etag', { 'if-none-match': '"v1"' }));
  });

  it('writes a plain JSON answer itself, with the type and length Express gives', async () => {
    const small = await send(ours.port, 'POST', '/small');
    expect(small.status).toBe(200);
    expect(small.headers).toContain('Content-Type: application/json; charset=utf-8');
    expect(small.headers).toContain(`Content-Length: ${Buffer.byteLength(small.body)}`);
    const long = await send(ours.port, 'GET', '/long');
    expect(JSON.parse(long.body)).toEqual(LONG);
    expect(long.headers).toContain(`Content-Length: ${Buffer.byteLength(long.body)}`);
    // Its own path, not Express's: res.json is not called for it.
    const json = jest.spyOn(ours.app.getHttpAdapter().getInstance().response as Response, 'json');
    try {
      await send(ours.port, 'POST', '/small');
      await send(ours.port, 'GET', '/typed');
      expect(json).toHaveBeenCalledTimes(1); // the typed answer only
    } finally {
      json.mockRestore();
    }
  });
});
