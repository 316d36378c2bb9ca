import type { Principal } from '../state/state.entities';

export type { Principal };

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    /**
     * The validated bearer token (entra mode), for a tool configured to forward it. Set as a
     * non-enumerable property, never stored and never logged.
     */
    bearerToken?: string;
    /**
     * Until when the caller's credential is accepted, in ms since the epoch (entra mode: the
     * token's `exp` plus TA_ENTRA_CLOCK_SKEW_SECONDS); unset when it does not expire (dev mode).
     * A connection that outlives its check (the `/stream` WebSocket) refuses input after it.
     */
    credentialAcceptedUntilMs?: number;
    /**
     * The caller's app roles (the token's `roles` claim; in dev mode the `X-Dev-Roles` header):
     * what the audit archive's readers and erasure check (TA_AUDIT_ROLE, TA_ADMIN_ROLE).
     */
    roles?: readonly string[];
  }
}

/** The fixed development identity of `TA_AUTH_MODE=dev`. */
export const DEV_TENANT_ID = '00000000-0000-0000-0000-000000000000';
export const DEV_OWNER_ID = 'dev-user';
