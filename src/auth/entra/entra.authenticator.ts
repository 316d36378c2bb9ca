import type { Request } from 'express';
import type { Logger } from 'pino';
import { MaybeAsync, thenOrNow } from '../../common/concurrency/maybe-async';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { callerFields } from '../../common/logging/log-context';
import { AccessPolicy, AccessPolicyOverride, applyOverride } from '../access-policy';
import { Authenticator } from '../authenticator';
import { BEARER_TOKEN, type Principal } from '../principal';
import { claimedIdentityOf } from './claimed-identity';
import { EntraAuthResult, EntraStrategy } from './entra.strategy';

/**
 * The Authenticator port (what the guard calls) implemented by the passport strategy's check.
 * The guard stays independent of passport, and the dev authenticator fits the same port.
 *
 * On success the caller is `(tid, oid)` and the validated token is attached to the request under
 * the BEARER_TOKEN symbol, so that serialising the request does not include it.
 * Log lines name the reason and the request id, never the token (and the caller's oid only hashed).
 */
export class EntraAuthenticator extends Authenticator {
  constructor(
    private readonly strategy: EntraStrategy,
    private readonly defaultPolicy: AccessPolicy,
    private readonly logger: Logger,
    /** Whether the identity provider's keys are in hand (JwksCache.ready), for readiness. */
    override readonly readiness?: () => Promise<void>,
  ) {
    super();
  }

  /** Synchronous for a token answered from the validator's cache (the guard then needs no promise). */
  authenticate(req: Request, override?: AccessPolicyOverride): MaybeAsync<Principal> {
    let result: MaybeAsync<EntraAuthResult>;
    try {
      // The strategy's own check, called directly: `passport.authenticate` would only call it and
      // hand back its result or error, and building its middleware, a strategy copy and five
      // callbacks per request was a third of Entra auth's cost per turn (profile, issue 14).
      result = this.strategy.validate(req, { policy: applyOverride(this.defaultPolicy, override) });
    } catch (err) {
      this.refuse(req, err);
    }
    return thenOrNow(
      result,
      (valid) => this.accept(req, valid),
      (err) => this.refuse(req, err),
    );
  }

  private accept(req: Request, result: EntraAuthResult): Principal {
    req[BEARER_TOKEN] = result.token;
    const { identity } = result;
    req.credentialAcceptedUntilMs = identity.acceptedUntilMs;
    req.roles = identity.roles;
    // The request's lines name the caller from here on (the guard then leaves them as they are).
    req.logContext?.set(callerFields({ tenantId: identity.tenantId, ownerId: identity.objectId }));
    // Its fields are built only when the line is written (debug is off as shipped; one per request).
    if (this.logger.isLevelEnabled('debug')) {
      this.logger.debug(
        { ...req.logContext?.fields, http_request_id: req.requestId, kind: identity.kind, ver: identity.tokenVersion },
        'bearer token accepted',
      );
    }
    return { tenantId: identity.tenantId, ownerId: identity.objectId };
  }

  /** Logs the refusal (its reason and claimed identity, never the token) and rethrows it. */
  private refuse(req: Request, err: unknown): never {
    this.logRefusal(req, err);
    throw err;
  }

  private logRefusal(req: Request, err: unknown): void {
    if (!(err instanceof DomainError)) return;
    const fields = { http_request_id: req.requestId, code: err.code, reason: err.message };
    if (err.code === ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE) {
      this.logger.warn({ ...fields, cause: String((err.cause as Error | undefined)?.message ?? err.cause) }, 'identity provider unreachable');
    } else {
      this.logger.info({ ...fields, ...claimedIdentityOf(err) }, 'bearer token refused');
    }
  }
}
