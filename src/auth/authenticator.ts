import type { MaybeAsync } from '../common/concurrency/maybe-async';
import type { Request } from 'express';
import type { AccessPolicyOverride } from './access-policy';
import type { Principal } from './principal';

/**
 * Turns a request into the caller's identity, or throws a DomainError (401/403/503). `override` is
 * the agent's `spec.auth`, when the route belongs to an agent that has one. A caller known without
 * I/O (the dev identity, a token validated before) is answered synchronously: no promise per request.
 */
export abstract class Authenticator {
  abstract authenticate(req: Request, override?: AccessPolicyOverride): MaybeAsync<Principal>;

  /**
   * Readiness of what authentication depends on (the identity provider's metadata and keys);
   * undefined when it depends on nothing outside the process (dev mode).
   */
  readonly readiness?: () => Promise<void>;
}
