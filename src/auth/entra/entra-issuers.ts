/**
 * The issuers a token of tenant `tid` may carry. Entra ID issues two token formats, and which one
 * an API receives depends on the API's app registration (`accessTokenAcceptedVersion`), not on
 * the caller, so both are accepted:
 * - v2.0: `{authority}/{tid}/v2.0`, e.g. `https://login.microsoftonline.com/{tid}/v2.0`
 * - v1.0: `https://sts.windows.net/{tid}/` (the security token service's own host, whatever
 *   authority the metadata came from; the China cloud has its own).
 *
 * The tenant in the issuer must be the token's own `tid`: a token whose issuer names another
 * tenant is refused, since a multi-tenant app shares one signing key set across all tenants.
 */
export function expectedIssuers(authority: string, tid: string): string[] {
  return [`${authority}/${tid}/v2.0`, `${v1StsOrigin(authority)}/${tid}/`];
}

const V1_STS_BY_AUTHORITY_HOST: Record<string, string> = {
  'login.chinacloudapi.cn': 'https://sts.chinacloudapi.cn',
  'login.partner.microsoftonline.cn': 'https://sts.chinacloudapi.cn',
};

function v1StsOrigin(authority: string): string {
  let host = '';
  try {
    host = new URL(authority).host.toLowerCase();
  } catch {
    // The environment check guarantees a URL; an odd value simply gets the public cloud's STS.
  }
  return V1_STS_BY_AUTHORITY_HOST[host] ?? 'https://sts.windows.net';
}
