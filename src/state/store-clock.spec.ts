import { StoreClock } from './store-clock';

/** A local clock the test moves by hand. */
function localClock(start: number) {
  let t = start;
  return { now: () => t, set: (ms: number) => (t = ms) };
}

describe('StoreClock', () => {
  it('is the local clock until the store has answered', () => {
    const local = localClock(1_000);
    const clock = new StoreClock({ resolutionMs: 1, local: local.now });
    expect(clock.now()).toBe(1_000);
    expect(clock.uncertainty()).toBeUndefined();
  });

  it('takes the middle of the round trip: a server 30 s behind reads 30 s behind', () => {
    const local = localClock(100_000);
    const clock = new StoreClock({ resolutionMs: 0, local: local.now });
    // Sent at 100 000, answered at 100 020; the server read 70 010 (its clock is 30 000 behind).
    clock.observe(70_010, 100_000, 100_020);
    expect(clock.offset()).toBe(-30_000);
    expect(clock.uncertainty()).toBe(10);
    local.set(200_000);
    expect(clock.now()).toBe(170_000);
  });

  it('counts a coarse clock (a Date header of whole seconds) as anywhere within its second', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 1000, local: local.now });
    // True server time 5 700 at local 5 000 (offset +700); the header says 5 000.
    clock.observe(5_000, 4_990, 5_010);
    expect(clock.offset()).toBe(500);
    expect(clock.uncertainty()).toBe(510);
  });

  it('narrows with samples that catch the second boundary', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 1000, local: local.now });
    // The true offset is +700: the server reads local + 700, truncated to the second.
    const header = (localMs: number) => Math.floor((localMs + 700) / 1000) * 1000;
    for (let t = 10_000; t < 12_000; t += 137) clock.observe(header(t + 5), t, t + 10);
    expect(Math.abs(clock.offset() - 700)).toBeLessThanOrEqual(80);
    expect(clock.uncertainty()).toBeLessThanOrEqual(80);
  });

  it('starts afresh when either clock jumps', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 0, local: local.now });
    clock.observe(1_001, 1_000, 1_002);
    expect(clock.offset()).toBe(0);
    // The server's clock stepped 10 s ahead: the bounds no longer overlap.
    clock.observe(12_001, 2_000, 2_002);
    expect(clock.offset()).toBe(10_000);
  });

  it('keeps a good estimate through a slow round trip (a store under load)', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 0, local: local.now });
    clock.observe(1_001, 1_000, 1_002); // offset within [-1, 1]
    // A 3 s round trip: the server could have answered any time in it; it says nothing new.
    clock.observe(6_500, 5_000, 8_000);
    expect(clock.offset()).toBe(0);
    expect(clock.uncertainty()).toBe(1);
  });

  it('lets the bound widen with time by the drift allowance, so a later sample within it still narrows it', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 1000, driftPpm: 1000, local: local.now });
    clock.observe(0, 0, 10); // [-10, 1000]
    clock.observe(999, 1_000, 1_010); // [-11, 999]; together [-11, 999] (1 ms of drift allowed)
    // 2 minutes on (119 ms of drift allowed: [-130, 1118]) the server reads [990, 2000]: both hold.
    clock.observe(121_000, 120_000, 120_010);
    expect(clock.offset()).toBe(1_054);
    expect(clock.uncertainty()).toBe(64);
  });

  it('ignores a call during which the local clock stepped back', () => {
    const local = localClock(0);
    const clock = new StoreClock({ resolutionMs: 1, local: local.now });
    clock.observe(5_000, 1_000, 900);
    expect(clock.uncertainty()).toBeUndefined();
  });
});
