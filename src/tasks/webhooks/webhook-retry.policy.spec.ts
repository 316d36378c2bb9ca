import { nextWebhookAttemptAt } from './webhook-retry.policy';

const T0 = Date.parse('2026-11-28T00:00:00Z');
const HOUR = 3_600_000;
const fixed = (r: number) => () => r;

describe('nextWebhookAttemptAt', () => {
  it('draws below a ceiling that doubles from 5 s and stops at 1 h (full jitter)', () => {
    const ceilings = [1, 2, 3, 4, 10, 11, 12, 50].map(
      (attempt) => nextWebhookAttemptAt({ attempt, createdAt: T0, now: T0 }, { retryHours: 24, random: fixed(0.999999) })! - T0,
    );
    expect(ceilings).toEqual([4_999, 9_999, 19_999, 39_999, 2_559_997, HOUR - 4, HOUR - 4, HOUR - 4]);
    expect(nextWebhookAttemptAt({ attempt: 3, createdAt: T0, now: T0 }, { retryHours: 24, random: fixed(0.5) })).toBe(T0 + 10_000);
  });

  it('never retries sooner than 1 s, however low the draw', () => {
    expect(nextWebhookAttemptAt({ attempt: 1, createdAt: T0, now: T0 + 5 }, { retryHours: 24, random: fixed(0) })).toBe(T0 + 5 + 1_000);
  });

  it('stays within its bounds over many draws', () => {
    for (let attempt = 1; attempt <= 30; attempt++) {
      const delay = nextWebhookAttemptAt({ attempt, createdAt: T0, now: T0 }, { retryHours: 24 })! - T0;
      expect(delay).toBeGreaterThanOrEqual(1_000);
      expect(delay).toBeLessThan(Math.min(HOUR, 5_000 * 2 ** (attempt - 1)));
    }
  });

  it('honours a later Retry-After, up to 1 h; an earlier one changes nothing', () => {
    const at = (retryAfterMs: number) => nextWebhookAttemptAt({ attempt: 1, createdAt: T0, now: T0, retryAfterMs }, { retryHours: 24, random: fixed(0.5) });
    expect(at(120_000)).toBe(T0 + 120_000);
    expect(at(100)).toBe(T0 + 2_500);
    expect(at(10 * HOUR)).toBe(T0 + HOUR);
  });

  it('is dead (undefined) once the next attempt would fall after createdAt + retryHours', () => {
    const options = { retryHours: 24, random: fixed(0.5) };
    expect(nextWebhookAttemptAt({ attempt: 20, createdAt: T0, now: T0 + 23 * HOUR }, options)).toBe(T0 + 23.5 * HOUR);
    expect(nextWebhookAttemptAt({ attempt: 20, createdAt: T0, now: T0 + 23.5 * HOUR }, options)).toBe(T0 + 24 * HOUR);
    expect(nextWebhookAttemptAt({ attempt: 20, createdAt: T0, now: T0 + 23.5 * HOUR + 1 }, options)).toBeUndefined();
    // A Retry-After past the window ends it too.
    expect(nextWebhookAttemptAt({ attempt: 1, createdAt: T0, now: T0 + 1, retryAfterMs: 2 * HOUR }, { retryHours: 1 })).toBeUndefined();
  });

  it('makes about 55 attempts in a day against a receiver that is down (the mean draw)', () => {
    let now = T0;
    let attempts = 1;
    for (;;) {
      const next = nextWebhookAttemptAt({ attempt: attempts, createdAt: T0, now }, { retryHours: 24, random: fixed(0.5) });
      if (next === undefined) break;
      now = next;
      attempts++;
    }
    expect(attempts).toBe(57);
  });
});
