import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Passport } from 'passport';
import { Strategy as CustomStrategy } from 'passport-custom';
import { MaybeAsync, thenOrNow } from '../../common/concurrency/maybe-async';
import type { AccessPolicy } from '../access-policy';
import { checkAccess } from './access-check';
import { readBearerToken } from './bearer-token';
import { withClaimedIdentity } from './claimed-identity';
import { withRefusedTenant } from './entra-errors';
import type { EntraIdentity } from './entra-identity';
import { EntraTokenValidator } from './entra-token.validator';

export const ENTRA_STRATEGY = 'entra-bearer';

/** Passed through `passport.authenticate(..., options)` to `validate`. */
export interface EntraStrategyOptions {
  policy: AccessPolicy;
}

export interface EntraAuthResult {
  identity: EntraIdentity;
  /** The validated raw token, for tools that are configured to forward it; never stored or logged. */
  token: string;
}

/** Each strategy registers on its own Passport instance (see getPassportInstance). */
const passports = new WeakMap<object, InstanceType<typeof Passport>>();

/**
 * The @nestjs/passport strategy (passport-custom, verification by jose): bearer token → validated
 * Entra identity → scope/role check. It throws DomainErrors (401/403/503), which passport hands
 * to the authenticate callback untouched, so the status codes are ours rather than passport's
 * blanket 401. A refusal carries who the token claims to be (claimed-identity.ts), for its audit.
 */
export class EntraStrategy extends PassportStrategy(CustomStrategy, ENTRA_STRATEGY) {
  constructor(private readonly validator: EntraTokenValidator) {
    super({ passOptionsToCallback: true });
  }

  /** Synchronous when the validator answers from its cache (entra-token.validator.ts), else a promise. */
  validate(req: Request, options: EntraStrategyOptions): MaybeAsync<EntraAuthResult> {
    const { token, digest } = readBearerToken(req);
    return thenOrNow(
      this.validator.validate(token, digest),
      (identity) => admitted(identity, token, options.policy),
      (err) => {
        throw withClaimedIdentity(err, token);
      },
    );
  }

  /**
   * @nestjs/passport registers strategies on passport's process-wide singleton by default. Several
   * apps in one process (the e2e tests start many, with different issuers) would then overwrite
   * each other's `entra-bearer`; a Passport instance per strategy keeps them apart. Called from the
   * base constructor, before this class's fields exist: hence the WeakMap rather than a field.
   */
  getPassportInstance(): InstanceType<typeof Passport> {
    let passport = passports.get(this);
    if (!passport) passports.set(this, (passport = new Passport()));
    return passport;
  }
}

/** The scope/role check of a validated identity; a refusal names the tenant (Entra's word: the audit's tid) and who the token claims to be. */
function admitted(identity: EntraIdentity, token: string, policy: AccessPolicy): EntraAuthResult {
  try {
    checkAccess(identity, policy);
  } catch (err) {
    throw withClaimedIdentity(withRefusedTenant(err, identity.tenantId), token);
  }
  return { identity, token };
}
