import { identityProviderUnavailable } from './entra-errors';

export type FetchJson = (url: string) => Promise<unknown>;

/**
 * GETs a JSON document from the identity provider within `timeoutMs`. Every failure (refused or
 * reset connection, timeout, non-200, a body that is not JSON) is an outage of the identity
 * provider and becomes IDENTITY_PROVIDER_UNAVAILABLE (503): a caller must never see 401 because
 * Entra ID or the network is down (passport-azure-ad's behaviour, dependencies.md §2).
 */
export function idpFetchJson(timeoutMs: number, fetchImpl: typeof fetch = fetch): FetchJson {
  return async (url: string) => {
    let res: Response;
    try {
      res = await fetchImpl(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      throw identityProviderUnavailable(new Error(`GET ${url} failed: ${describe(err)}`, { cause: err }));
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      throw identityProviderUnavailable(new Error(`GET ${url} answered ${res.status}`));
    }
    try {
      return (await res.json()) as unknown;
    } catch (err) {
      throw identityProviderUnavailable(new Error(`GET ${url} did not return JSON: ${describe(err)}`, { cause: err }));
    }
  };
}

function describe(err: unknown): string {
  // Duck-typed: the abort reason is a DOMException, which is not an Error in every realm.
  const e = err as { name?: string; message?: string; cause?: { code?: string } } | undefined;
  if (e?.name === 'TimeoutError') return 'timed out';
  return e?.cause?.code ?? e?.message ?? String(err);
}
