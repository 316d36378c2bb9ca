import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator';
import { SERVICE_INDEX_CSP, serviceIndexHtml } from './service-index';
import type { ServiceIndex } from './service-index';

export const SERVICE_INDEX = Symbol('SERVICE_INDEX');

/**
 * `GET /`: the agents this process serves, their routes and the console link. JSON, unless the
 * caller prefers HTML (a browser's `Accept`). Open, as every agent's openapi.json is: it tells no
 * more than they do.
 */
@Controller()
@Public()
export class ServiceIndexController {
  private readonly html: string;

  constructor(@Inject(SERVICE_INDEX) private readonly index: ServiceIndex) {
    this.html = serviceIndexHtml(index);
  }

  @Get()
  get(@Req() req: Request, @Res() res: Response): void {
    res.vary('Accept');
    if (req.accepts(['application/json', 'text/html']) === 'text/html') {
      res.type('text/html; charset=utf-8').setHeader('Content-Security-Policy', SERVICE_INDEX_CSP);
      res.send(this.html);
      return;
    }
    res.json(this.index);
  }
}
