import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Logger } from 'pino';
import { LOGGER } from '../app.tokens';
import type { EnvConfig } from '../config/env.config';
import { AuthGuard } from './auth.guard';
import { Authenticator } from './authenticator';
import { DevAuthenticator } from './dev.authenticator';

/** The Authenticator TA_AUTH_MODE selects, and the global guard that applies it to every route. */
@Global()
@Module({})
export class AuthModule {
  static forRoot(auth: EnvConfig['auth']): DynamicModule {
    return {
      module: AuthModule,
      providers: [
        {
          provide: Authenticator,
          useFactory: (logger: Logger) => (auth.mode === 'dev' ? new DevAuthenticator() : entraAuthenticator(auth, logger)),
          inject: [LOGGER],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
      exports: [Authenticator],
    };
  }
}

/** Loaded only in `entra` mode: passport and jose are not needed by a dev-auth server. */
function entraAuthenticator(auth: EnvConfig['auth'], logger: Logger): Authenticator {
  const { createEntraAuthenticator } = require('./entra/create-entra-authenticator') as typeof import('./entra/create-entra-authenticator');
  return createEntraAuthenticator(auth, logger);
}
