import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Logger } from 'pino';
import { LOGGER } from '../app.tokens';
import type { EnvConfig } from '../config/env.config';
import { AuthGuard } from './auth.guard';
import { Authenticator } from './authenticator';
import { DevAuthenticator } from './dev.authenticator';
import { createEntraAuthenticator } from './entra/create-entra-authenticator';

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
          useFactory: (logger: Logger) => (auth.mode === 'dev' ? new DevAuthenticator() : createEntraAuthenticator(auth, logger)),
          inject: [LOGGER],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
      exports: [Authenticator],
    };
  }
}
