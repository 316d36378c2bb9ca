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
  }
}

/** The fixed development identity of `TA_AUTH_MODE=dev`. */
export const DEV_TENANT_ID = '00000000-0000-0000-0000-000000000000';
export const DEV_OWNER_ID = 'dev-user';
