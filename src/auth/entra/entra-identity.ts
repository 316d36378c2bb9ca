/** What a valid Entra ID access token says about its caller. */
export interface EntraIdentity {
  /** `tid`, lower case. */
  tenantId: string;
  /** `oid`: the user, or for an app-only token the calling app's service principal. Lower case. */
  objectId: string;
  tokenVersion: '1.0' | '2.0';
  /** `delegated`: a user through an app (has `scp`); `app`: an app as itself (client credentials). */
  kind: 'delegated' | 'app';
  scopes: string[];
  roles: string[];
  /** The calling app's client id (`azp` in v2, `appid` in v1). */
  clientAppId?: string;
  /** `exp` plus the clock skew, in ms since the epoch: from then on this token is refused. */
  acceptedUntilMs: number;
}
