import type { WebhookEventType, WebhookSecret, WebhookTarget } from '../../agents/config/webhooks.schema';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';

/** One place events of a request are POSTed to, with the secret that signs them. */
export interface WebhookDestination {
  /** Normalised by WHATWG URL (no fragment): what is stored and requested. */
  url: string;
  events: readonly WebhookEventType[];
  /** Store `secret.env`, never the secret; the dispatcher finds it again in the agent's webhooks. */
  secret: WebhookSecret;
}

/**
 * Whether `url` lies under `prefix`: same origin (scheme, host, port as WHATWG URL normalises
 * them) and a path that starts with the prefix's on a segment boundary. Comparing parsed parts, not
 * strings, is what keeps `https://hooks.example.com.evil.io`, `https://hooks.example.com@evil.io`
 * and `https://hooks.example.com/hooks/../admin` from passing as `https://hooks.example.com/hooks`:
 * the first two have another host, and the parser has already resolved the `..`.
 */
export function isUnderPrefix(url: URL, prefix: URL): boolean {
  if (url.origin !== prefix.origin || url.origin === 'null') return false;
  const base = prefix.pathname;
  return base.endsWith('/') ? url.pathname.startsWith(base) : url.pathname === base || url.pathname.startsWith(`${base}/`);
}

/** Stored with every delivery of the request's events: kept to what browsers and proxies handle anyway. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** An encoded `/` or `\` is a separator to many servers but not to the prefix check: refused rather than guessed. */
const ENCODED_SEPARATOR = /%2f|%5c/i;

/**
 * A request's `webhook_url`, accepted only under one of the agent's `allow_request_urls`; the
 * longest matching prefix picks the entry whose secret signs it and whose events it receives (the
 * first entry on a tie). Pure: whether the host resolves to a public address is checked on every
 * delivery attempt (webhook-address.resolver.ts), since DNS can change in between.
 * Throws VALIDATION_FAILED (422) naming `field` otherwise.
 */
export function requestWebhookDestination(targets: readonly WebhookTarget[], webhookUrl: unknown, field = 'webhook_url'): WebhookDestination {
  const refuse = (message: string) => new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
  let url: URL;
  try {
    if (typeof webhookUrl !== 'string') throw new TypeError();
    url = new URL(webhookUrl);
  } catch {
    throw refuse('must be an absolute http:// or https:// URL');
  }
  if (webhookUrl.length > MAX_WEBHOOK_URL_LENGTH) throw refuse(`must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('must be an absolute http:// or https:// URL');
  if (url.username || url.password) throw refuse('must not hold a user name or password');
  if (ENCODED_SEPARATOR.test(url.pathname)) throw refuse('must not hold an encoded / or \\ in its path');
  url.hash = '';

  let best: { target: WebhookTarget; length: number } | undefined;
  for (const target of targets) {
    for (const allowed of target.allowRequestUrls) {
      const prefix = new URL(allowed);
      if (isUnderPrefix(url, prefix) && (!best || prefix.pathname.length > best.length)) best = { target, length: prefix.pathname.length };
    }
  }
  if (!best) {
    throw refuse(
      targets.some((t) => t.allowRequestUrls.length)
        ? "is not under one of this agent's allowed webhook URLs (spec.webhooks[].allow_request_urls)"
        : 'is not accepted by this agent (it allows no request webhook URLs: spec.webhooks[].allow_request_urls)',
    );
  }
  return { url: url.href, events: best.target.events, secret: best.target.secret };
}
