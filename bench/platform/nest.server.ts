import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express/adapters/express-adapter.js';
import type { Express } from 'express';
import { PAYLOAD } from './payload';

/** Nest on Express (the versions ours runs on), nothing else: one controller, one GET, no middleware, guard or interceptor. Prints its port. */
@Controller()
class PayloadController {
  @Get('x')
  get() {
    return PAYLOAD;
  }
}

@Module({ controllers: [PayloadController] })
class PayloadModule {}

void (async () => {
  const app = await NestFactory.create(PayloadModule, new ExpressAdapter(), { logger: false });
  const express = app.getHttpAdapter().getInstance() as Express;
  express.set('etag', false);
  express.set('x-powered-by', false);
  await app.listen(0, '127.0.0.1');
  process.stdout.write(`${(app.getHttpServer().address() as { port: number }).port}\n`);
})();
