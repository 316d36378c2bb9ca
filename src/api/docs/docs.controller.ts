import { Controller, Get, Header, Param, Res, Type } from '@nestjs/common';
import type { Response } from 'express';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { Public } from '../../auth/public.decorator';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { buildOpenApi } from './openapi.builder';
import { REDOC_CSP, REDOC_SCRIPT, redocBundle, redocPage } from './redoc-page';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

let assetDir: string | undefined;
function swaggerAsset(name: string): Buffer {
  assetDir ??= join(require.resolve('swagger-ui-dist/package.json'), '..');
  return readFileSync(join(assetDir, name));
}

/**
 * `GET /{name}/{version}/openapi.json`, `/docs` (Swagger UI) and `/redoc` (ReDoc), as FastAPI serves
 * them upstream; both viewers are served from the local packages, never a CDN.
 */
export function createDocsController(agent: AgentDefinition): Type<unknown> {
  const document = buildOpenApi(agent);
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(agent.source)} API</title>
<link rel="stylesheet" href="${agent.prefix}/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="${agent.prefix}/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: ${JSON.stringify(`${agent.prefix}/openapi.json`)}, dom_id: '#swagger-ui' });</script>
</body></html>`;

  const redocHtml = redocPage(agent.prefix, `${agent.source} API`);

  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  @Public()
  class DocsController {
    @Get('openapi.json')
    openapi() {
      return document;
    }

    @Get('docs')
    @Header('Content-Type', 'text/html; charset=utf-8')
    docs() {
      return page;
    }

    @Get('redoc')
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Content-Security-Policy', REDOC_CSP)
    redoc() {
      return redocHtml;
    }

    @Get(`redoc/${REDOC_SCRIPT}`)
    redocScript(@Res() res: Response) {
      res.type('application/javascript; charset=utf-8').setHeader('Cache-Control', 'public, max-age=86400');
      res.send(redocBundle());
    }

    @Get('docs/:asset')
    asset(@Param('asset') asset: string, @Res() res: Response) {
      const type = ASSETS[asset];
      if (!type) throw new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'No such route');
      res.type(type).setHeader('Cache-Control', 'public, max-age=86400');
      res.send(swaggerAsset(asset));
    }
  }
  return named(DocsController, `DocsController[${agent.source}]`);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
