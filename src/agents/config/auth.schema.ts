import { IsTextList, Optional } from './field-validators';

/**
 * `spec.auth` (our extension, docs/auth.md): what a caller's token must carry to use this agent,
 * replacing TA_ENTRA_REQUIRED_SCOPES / TA_ENTRA_REQUIRED_ROLES for it. Each list given replaces the
 * server-wide one; an empty list refuses that kind of token (e.g. `required_scopes: []` for an
 * agent only orchestrators may call). Ignored in TA_AUTH_MODE=dev.
 */
export class AgentAuthConfig {
  /** Delegated (user) tokens need one of these in `scp`. */
  @Optional() @IsTextList() required_scopes?: string[];
  /** App-only tokens need one of these in `roles`. */
  @Optional() @IsTextList() required_roles?: string[];
}
