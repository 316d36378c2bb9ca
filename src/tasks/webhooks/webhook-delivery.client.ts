import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { WebhookSecret } from '../../agents/config/webhooks.schema';
import type { KeyedSemaphore } from '../../common/concurrency/keyed-semaphore.util';
import { parseRetryAfter } from './retry-after.util';
import { LookupAll, resolveWebhookAddress, WebhookAddress, WebhookAddressRefused } from './webhook-address.resolver';
import { signWebhook } from './webhook-signer.util';

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
/** What is read of a receiver's answer before the connection is dropped: only its status counts. */
export const MAX_RESPONSE_BYTES = 4 * 1024;
const USER_AGENT = 'teal-agent-server (webhooks)';

export interface WebhookAttempt {
  url: string;
  secret: WebhookSecret;
  /** `webhook-id`: the event's, the same on every attempt. */
  id: string;
  /** The JSON text to send, exactly as signed. */
  body: string;
  /** TA_WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** The whole attempt: name lookup, connect, TLS, the answer's status and its first bytes. */
  timeoutMs?: number;
  /** Taken when given: an attempt waits for a slot of its origin before its timeout starts. */
  limiter?: KeyedSemaphore;
  /** Ends the attempt early (shutdown). */
  signal?: AbortSignal;
  /** The signature's timestamp (default: now). */
  now?: () => Date;
  lookup?: LookupAll;
}

export interface WebhookAttemptResult {
  /** A 2xx answer: delivered. */
  ok: boolean;
  status?: number;
  /** Why it failed, for the delivery record and the logs (never the secret, never the body). */
  error?: string;
  /**
   * The SSRF guard stopped it before any connection (or the URL is not one): a retry changes
   * nothing unless the host's DNS does.
   */
  refused?: true;
  /** The receiver's `Retry-After` on a failed answer (bounded: retry-after.util.ts). */
  retryAfterMs?: number;
  durationMs: number;
}

/**
 * One attempt to deliver one event: a signed POST over node:http(s) to the address the SSRF guard
 * checked. Never throws for what the network or the receiver does; every outcome is a result the
 * retry schedule reads. Redirects are not followed (a 3xx is a failed attempt): following one would
 * send a signed event to a URL nobody allowed, and could reach an internal address.
 */
export async function deliverWebhookAttempt(attempt: WebhookAttempt): Promise<WebhookAttemptResult> {
  if (!attempt.limiter) return attemptOnce(attempt);
  let origin: string;
  try {
    origin = new URL(attempt.url).origin;
  } catch {
    return { ok: false, error: 'not an absolute URL', refused: true, durationMs: 0 };
  }
  return attempt.limiter.run(origin, () => attemptOnce(attempt));
}

async function attemptOnce(attempt: WebhookAttempt): Promise<WebhookAttemptResult> {
  const started = Date.now();
  const timeoutMs = attempt.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new AttemptTimeout(timeoutMs)), timeoutMs);
  const signal = attempt.signal ? AbortSignal.any([deadline.signal, attempt.signal]) : deadline.signal;
  const done = (result: Omit<WebhookAttemptResult, 'durationMs'>): WebhookAttemptResult => ({ ...result, durationMs: Date.now() - started });
  try {
    const address = await untilAborted(resolveWebhookAddress(attempt.url, { allowPrivate: attempt.allowPrivate, lookup: attempt.lookup }), signal);
    const response = await post(address, attempt, signal);
    const status = response.statusCode ?? 0;
    const ok = status >= 200 && status < 300;
    await drain(response, signal);
    if (ok) return done({ ok, status });
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], Date.now());
    const error = status >= 300 && status < 400 ? `redirect not followed (HTTP ${status})` : `HTTP ${status}`;
    return done({ ok, status, error, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  } catch (e) {
    if (e instanceof WebhookAddressRefused && !signal.aborted) return done({ ok: false, error: e.message, refused: true });
    return done({ ok: false, error: describeFailure(e, signal) });
  } finally {
    clearTimeout(timer);
  }
}

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'AttemptTimeout';
  }
}

function describeFailure(e: unknown, signal: AbortSignal): string {
  if (signal.aborted) return signal.reason instanceof AttemptTimeout ? signal.reason.message : 'aborted';
  const error = e as NodeJS.ErrnoException;
  return error.code && !error.message.includes(error.code) ? `${error.code}: ${error.message}` : (error.message ?? String(e));
}

/** `promise`, or the signal's reason once it aborts (a name lookup cannot be cancelled, only left). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The POST, connected to the checked address. The URL's host name stays the request's host, so the
 * Host header, TLS's SNI and the certificate check all use it; only the connection's lookup is
 * replaced by the checked answer, so a second DNS answer (rebinding) is never asked for. No agent:
 * a pooled socket was connected for another lookup, and webhooks are too rare to need one.
 */
function post(address: WebhookAddress, attempt: WebhookAttempt, signal: AbortSignal): Promise<IncomingMessage> {
  // Called with `all: true` when the socket tries address families in turn (autoSelectFamily).
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  };
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(attempt.body)),
    'user-agent': USER_AGENT,
    ...signWebhook(attempt.secret, attempt.id, attempt.body, attempt.now?.() ?? new Date()),
  };
  const request = address.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(address.url, { method: 'POST', headers, agent: false, lookup: pinned, signal });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(attempt.body);
  });
}

/** Reads up to MAX_RESPONSE_BYTES of the answer and drops the connection; the status is already known. */
function drain(response: IncomingMessage, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    const finish = () => {
      signal.removeEventListener('abort', finish);
      response.destroy();
      resolve();
    };
    signal.addEventListener('abort', finish, { once: true });
    response.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= MAX_RESPONSE_BYTES) finish();
    });
    response.once('end', finish);
    response.once('error', finish);
    response.once('close', finish);
  });
}
