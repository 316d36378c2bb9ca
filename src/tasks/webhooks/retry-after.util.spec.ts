import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after.util';

const NOW = Date.parse('2026-11-28T04:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter(['30', '60'], NOW)).toBe(30_000);
  });

  it('reads an HTTP-date, relative to now; a past date is 0', () => {
    expect(parseRetryAfter('Sat, 28 Nov 2026 04:02:00 GMT', NOW)).toBe(120_000);
    expect(parseRetryAfter('Sat, 28 Nov 2026 03:00:00 GMT', NOW)).toBe(0);
  });

  it('caps both forms (default 1 hour, or the bound given)', () => {
    expect(parseRetryAfter('86400', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Sun, 29 Nov 2026 04:00:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('600', NOW, 60_000)).toBe(60_000);
  });

  it.each([undefined, '', '-1', '1.5', '1e3', '0x10', 'soon', 'Sat, 99 Foo 2026'])('ignores %p', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});
