import { HeaderOf, providerDelayMs } from './provider-status.mapper';

/** The first retry waits about this long, each further one twice as long, up to MAX_DELAY_MS. */
const INITIAL_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;
/** A provider's own Retry-After is obeyed up to this; beyond it (or absent) the backoff applies. */
const MAX_PROVIDER_DELAY_MS = 60_000;

/**
 * Whether an HTTP error answer is worth another attempt: the provider's `x-should-retry` when it
 * says, else request timeout (408), lock conflict (409), rate limit (429) and any 5xx. The same
 * rules as the openai SDK, which makes the streamed calls, so both kinds of call retry alike.
 */
export function shouldRetry(status: number, header: HeaderOf): boolean {
  const explicit = header('x-should-retry');
  if (explicit === 'true') return true;
  if (explicit === 'false') return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * How long to wait before retry number `retry` (0 for the first): the provider's `retry-after-ms`
 * or `retry-after` (seconds or an HTTP date) when given and within a minute, else exponential
 * backoff from 0.5 s up to 8 s, less up to a quarter at random so that replicas do not retry in step.
 */
export function retryDelayMs(header: HeaderOf | undefined, retry: number, random = Math.random): number {
  const asked = header && providerDelayMs(header);
  if (asked !== undefined && Number.isFinite(asked) && asked >= 0 && asked <= MAX_PROVIDER_DELAY_MS) return asked;
  return Math.min(INITIAL_DELAY_MS * 2 ** retry, MAX_DELAY_MS) * (1 - random() * 0.25);
}
