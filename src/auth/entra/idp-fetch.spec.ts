import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { idpFetchJson } from './idp-fetch';
import { OpenIdMetadataSource } from './openid-metadata';

const URL_ = 'https://login.example.test/t/v2.0/.well-known/openid-configuration';

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    const err = e as DomainError;
    return `${err.code}: ${(err.cause as Error)?.message}`;
  }
}

describe('idpFetchJson', () => {
  it('returns the JSON of a 200', async () => {
    const fetchJson = idpFetchJson(1000, async () => Response.json({ ok: 1 }));
    await expect(fetchJson(URL_)).resolves.toEqual({ ok: 1 });
  });

  it.each<[string, typeof fetch, RegExp]>([
    ['a refused connection', async () => Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })), /ECONNREFUSED/],
    ['a 500', async () => new Response('oops', { status: 500 }), /answered 500/],
    ['a 404', async () => new Response('', { status: 404 }), /answered 404/],
    ['a body that is not JSON', async () => new Response('<html>', { status: 200 }), /did not return JSON/],
  ])('turns %s into IDENTITY_PROVIDER_UNAVAILABLE (503), never a 401', async (_n, impl, cause) => {
    const result = await failure(idpFetchJson(1000, impl)(URL_));
    expect(result).toMatch(new RegExp(`^${ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE}: `));
    expect(result).toMatch(cause);
  });

  it('gives up after the timeout', async () => {
    const hang: typeof fetch = (_u, init) => new Promise((_r, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason)));
    const started = Date.now();
    expect(await failure(idpFetchJson(100, hang)(URL_))).toMatch(/IDENTITY_PROVIDER_UNAVAILABLE: .*timed out/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('OpenIdMetadataSource', () => {
  it('reads jwks_uri once, and keeps a known document while a refresh fails', async () => {
    let calls = 0;
    let up = true;
    let now = 0;
    const source = new OpenIdMetadataSource(
      URL_,
      async () => {
        calls++;
        if (!up) throw new DomainError(ErrorCode.IDENTITY_PROVIDER_UNAVAILABLE, 'down');
        return { issuer: 'x', jwks_uri: 'https://login.example.test/t/discovery/v2.0/keys' };
      },
      1000,
      () => now,
    );
    await Promise.all([source.get(), source.get()]);
    expect(calls).toBe(1);
    now = 1000;
    up = false;
    await expect(source.get()).resolves.toMatchObject({ jwks_uri: 'https://login.example.test/t/discovery/v2.0/keys' });
    expect(calls).toBe(2);
  });

  it('is a 503 when the document has no jwks_uri', async () => {
    const source = new OpenIdMetadataSource(URL_, async () => ({ issuer: 'x' }), 1000);
    expect(await failure(source.get())).toMatch(/IDENTITY_PROVIDER_UNAVAILABLE: .*jwks_uri/);
  });
});
