import { WebhookSecret } from '../../agents/config/webhooks.schema';
import { KeyedSemaphore } from '../../common/concurrency/keyed-semaphore.util';
import { deliverWebhookAttempt, WebhookAttempt } from './webhook-delivery.client';

/**
 * What an attempt does before it sends a byte (the SSRF guard, the deadline over the name lookup,
 * shutdown). Answers of a real receiver: test/webhooks/webhook-delivery.e2e-spec.ts.
 */
const attempt = (over: Partial<WebhookAttempt>): WebhookAttempt => ({
  url: 'https://hooks.example.com/x',
  secret: new WebhookSecret('S', `whsec_${Buffer.alloc(32, 1).toString('base64')}`),
  id: 'msg_1',
  body: '{}',
  allowPrivate: false,
  ...over,
});

const never = () => new Promise<never>(() => {});

describe('deliverWebhookAttempt, before anything is sent', () => {
  it('reports an address the SSRF guard refuses as a failed attempt, without connecting', async () => {
    const lookup = jest.fn(async () => [{ address: '169.254.169.254', family: 4 }]);
    const result = await deliverWebhookAttempt(attempt({ url: 'http://metadata.evil.io/latest', lookup }));
    expect(result).toMatchObject({ ok: false, error: 'metadata.evil.io (169.254.169.254) is refused: link-local (cloud metadata)', refused: true });
    expect(result.status).toBeUndefined();
    expect(lookup).toHaveBeenCalledWith('metadata.evil.io');
  });

  it('refuses a URL that is not absolute, with or without a limiter', async () => {
    expect(await deliverWebhookAttempt(attempt({ url: 'nope' }))).toMatchObject({ ok: false, error: 'not an absolute URL', refused: true });
    expect(await deliverWebhookAttempt(attempt({ url: 'nope', limiter: new KeyedSemaphore() }))).toMatchObject({
      ok: false,
      error: 'not an absolute URL',
      refused: true,
    });
  });

  it('counts a name lookup that hangs against the attempt timeout', async () => {
    const result = await deliverWebhookAttempt(attempt({ lookup: never, timeoutMs: 50 }));
    expect(result).toMatchObject({ ok: false, error: 'timed out after 50 ms' });
    expect(result.durationMs).toBeGreaterThanOrEqual(45);
  });

  it('ends when its signal aborts (shutdown), and frees its slot of the origin', async () => {
    const limiter = new KeyedSemaphore(1);
    const shutdown = new AbortController();
    const pending = deliverWebhookAttempt(attempt({ lookup: never, limiter, signal: shutdown.signal }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(limiter.inFlight('https://hooks.example.com')).toBe(1);
    shutdown.abort();
    expect(await pending).toMatchObject({ ok: false, error: 'aborted' });
    expect(limiter.inFlight('https://hooks.example.com')).toBe(0);
  });
});
