import type { Principal } from '../state/state.entities';

export type { Principal };

/**
 * The key of a request's validated bearer token (entra mode), for a tool configured to forward it;
 * never stored and never logged. A symbol, so that JSON.stringify and Object.keys skip it, as they
 * would a non-enumerable property, without `Object.defineProperty` on every request (V8's slow
 * path: 2 µs of an Entra turn, issue 27). Like the Authorization header it was read from, it lives
 * on the request object only.
 */
export const BEARER_TOKEN: unique symbol = Symbol('bearer token');

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    [BEARER_TOKEN]?: string;
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
