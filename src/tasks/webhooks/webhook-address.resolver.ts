import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { blockedAddress } from './blocked-address.util';

/** dns.promises.lookup with `all: true`, the seam the specs replace. */
export type LookupAll = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

const systemLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Where one attempt connects: the address checked here, never a second lookup (DNS rebinding). */
export interface WebhookAddress {
  url: URL;
  /** The IP to connect to. */
  address: string;
  family: 4 | 6;
}

/** A webhook URL the SSRF guard refuses; `message` names the host and the address class, never the path. */
export class WebhookAddressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookAddressRefused';
  }
}

export interface ResolveOptions {
  /** TA_WEBHOOK_ALLOW_PRIVATE: loopback, private, CGNAT and unique local addresses are allowed. */
  allowPrivate: boolean;
  lookup?: LookupAll;
}

/**
 * The SSRF guard: resolves the URL's host and returns the address to connect to, or throws
 * WebhookAddressRefused. Every address the name resolves to is checked and one refused address
 * refuses the URL: a name that mixes a public and a private address would otherwise reach the
 * private one on some attempts. An IP literal is checked as written after Node's URL normalised it
 * (`http://2130706433/`, `http://0x7f.1/` and `http://0177.0.0.1/` are all 127.0.0.1 by then).
 */
export async function resolveWebhookAddress(target: string | URL, options: ResolveOptions): Promise<WebhookAddress> {
  const url = typeof target === 'string' ? parseUrl(target) : target;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WebhookAddressRefused(`not an http(s) URL: ${url.protocol}`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let found: readonly { address: string; family: number }[];
  if (isIP(host)) found = [{ address: host, family: isIP(host) }];
  else {
    try {
      found = await (options.lookup ?? systemLookup)(host);
    } catch (e) {
      throw new WebhookAddressRefused(`${host} does not resolve (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  if (!found.length) throw new WebhookAddressRefused(`${host} does not resolve`);
  for (const { address } of found) {
    const verdict = blockedAddress(address);
    if (verdict && !(verdict.private && options.allowPrivate)) {
      const hint = verdict.private ? '; TA_WEBHOOK_ALLOW_PRIVATE=true allows it' : '';
      throw new WebhookAddressRefused(`${address === host ? host : `${host} (${address})`} is refused: ${verdict.reason}${hint}`);
    }
  }
  const first = found[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw new WebhookAddressRefused('not an absolute URL');
  }
}
