import { isoNow, isoTime } from './iso-time';

describe('isoTime', () => {
  it('writes what toISOString writes, across seconds, slots and the edges of the four-digit years', () => {
    const times = [
      0,
      1,
      9,
      10,
      99,
      100,
      999,
      1000,
      1001,
      59_999,
      60_000,
      Date.UTC(2026, 10, 30, 23, 59, 59, 999),
      Date.UTC(2026, 11, 31, 23, 59, 59, 7),
      951_782_400_000,
      253402300799999,
    ];
    for (let i = 0; i < 5_000; i++) times.push(Math.floor(Math.random() * 4_102_444_800_000));
    // The same second again after others that share its slot, and a fraction of a millisecond.
    times.push(1_700_000_000_123, 1_700_000_008_456, 1_700_000_000_789, 1_700_000_000_123.9);
    for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });

  it('leaves to toISOString the years it writes with a sign, and refuses an invalid time as it does', () => {
    for (const ms of [-1, -62_198_755_200_000, 253402300800000, 8.64e15]) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    for (const ms of [NaN, Infinity, 8.64e15 + 1]) expect(() => isoTime(ms)).toThrow(RangeError);
  });

  it('isoNow is the time now', () => {
    const before = Date.now();
    const at = Date.parse(isoNow());
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});
