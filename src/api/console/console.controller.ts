import { Controller, Get, Param, Res, Type } from '@nestjs/common';
import type { Response } from 'express';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { Public } from '../../auth/public.decorator';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { consoleAsset, consoleCsp, consoleIndex } from './console-assets';

/** What the page needs to start: the auth mode, MSAL's settings, and the agents it can talk to. */
export function consoleConfig(env: Pick<EnvConfig, 'auth' | 'console'>, agents: AgentDefinition[]) {
  const { auth, console: c } = env;
  const msal =
    auth.mode === 'entra' && c.clientId
      ? {
          client_id: c.clientId,
          authority: `${auth.authority}/${auth.tenantId ?? 'organizations'}`,
          scopes: c.scopes.length ? c.scopes : auth.audiences.slice(0, 1).map((a) => `${a.includes('://') ? a : `api://${a}`}/.default`),
        }
      : null;
  return {
    auth_mode: auth.mode,
    msal,
    agents: agents.map((a) => ({
      name: a.name,
      version: a.version,
      api_version: a.apiVersion,
      prefix: a.prefix,
      stateful: a.module === 'v3',
      description: a.description,
    })),
  };
}

/**
 * `GET /console` (the page), `/console/config.json` and `/console/assets/*` (Vite's hashed
 * files, cached for good). Public: the page holds no data; every API call it makes is authenticated.
 */
export function createConsoleController(env: Pick<EnvConfig, 'auth' | 'console'>, agents: AgentDefinition[], dir: string): Type<unknown> {
  const config = consoleConfig(env, agents);
  const authority = config.msal ? config.msal.authority : undefined;
  const csp = consoleCsp(authority);

  @Controller('console')
  @Public()
  class ConsoleController {
    @Get()
    page(@Res() res: Response) {
      const html = consoleIndex(dir);
      if (html === undefined) {
        throw new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'The console is not built: run `npm run build` (or `npm run build:console`)');
      }
      res.setHeader('Content-Security-Policy', csp);
      res.setHeader('Cache-Control', 'no-cache');
      res.type('text/html; charset=utf-8').send(html);
    }

    @Get('config.json')
    config(@Res() res: Response) {
      res.setHeader('Cache-Control', 'no-store');
      res.json(config);
    }

    @Get('assets/:file')
    asset(@Param('file') file: string, @Res() res: Response) {
      const found = consoleAsset(dir, file);
      if (!found) throw new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'No such route');
      // Vite names every asset by its content hash: a new build is a new name.
      res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
      res.type(found.type).send(found.body);
    }
  }
  return ConsoleController;
}
