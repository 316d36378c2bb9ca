import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Request } from 'express';
import type { EnvConfig } from '../config/env.config';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { AuthGuard } from './auth.guard';
import { Authenticator } from './authenticator';
import { DevAuthenticator } from './dev.authenticator';
import type { Principal } from './principal';

/** Until Entra ID validation is wired in, entra mode accepts no token (fail closed). */
class NoTokenAcceptedAuthenticator extends Authenticator {
  async authenticate(_req: Request): Promise<Principal> {
    throw new DomainError(ErrorCode.UNAUTHENTICATED, 'Bearer token validation is not available in this build', {
      headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
    });
  }
}

@Global()
@Module({})
export class AuthModule {
  static forRoot(auth: EnvConfig['auth']): DynamicModule {
    const authenticator = auth.mode === 'dev' ? new DevAuthenticator() : new NoTokenAcceptedAuthenticator();
    return {
      module: AuthModule,
      providers: [{ provide: Authenticator, useValue: authenticator }, { provide: APP_GUARD, useClass: AuthGuard }],
      exports: [Authenticator],
    };
  }
}
