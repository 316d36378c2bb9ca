import type { Request } from 'express';
import type { Principal } from './principal';

/** Turns a request into the caller's identity, or throws a DomainError (401/403/503). */
export abstract class Authenticator {
  abstract authenticate(req: Request): Promise<Principal>;
}
