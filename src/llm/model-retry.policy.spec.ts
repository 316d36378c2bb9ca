import { retryDelayMs, shouldRetry } from './model-retry.policy';

const headers = (h: Record<string, string>) => (name: string) => h[name];

describe('shouldRetry', () => {
  it.each([408, 409, 429, 500, 502, 503, 504])('retries HTTP %i', (status) => {
    expect(shouldRetry(status, headers({}))).toBe(true);
  });

  it.each([400, 401, 403, 404, 422])('does not retry HTTP %i', (status) => {
    expect(shouldRetry(status, headers({}))).toBe(false);
  });

  it("obeys the provider's x-should-retry either way", () => {
    expect(shouldRetry(400, headers({ 'x-should-retry': 'true' }))).toBe(true);
    expect(shouldRetry(503, headers({ 'x-should-retry': 'false' }))).toBe(false);
  });
});

describe('retryDelayMs', () => {
  it('backs off from 0.5 s, doubling up to 8 s, less up to a quarter at random', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => retryDelayMs(undefined, n, () => 0))).toEqual([500, 1000, 2000, 4000, 8000, 8000]);
    expect(retryDelayMs(undefined, 0, () => 1)).toBe(375);
  });

  it('waits what the provider asks: retry-after-ms, retry-after in seconds or as a date', () => {
    expect(retryDelayMs(headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), 0)).toBe(1500);
    expect(retryDelayMs(headers({ 'retry-after': '2' }), 0)).toBe(2000);
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    expect(retryDelayMs(headers({ 'retry-after': inTenSeconds }), 0)).toBeGreaterThan(8_000);
  });

  it('falls back to the backoff when the provider asks for more than a minute, a past date or nonsense', () => {
    for (const h of [{ 'retry-after': '61' }, { 'retry-after': new Date(Date.now() - 5_000).toUTCString() }, { 'retry-after': 'soon' }]) {
      expect(retryDelayMs(headers(h), 1, () => 0)).toBe(1000);
    }
  });
});
