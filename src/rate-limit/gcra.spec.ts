import { gcraCharge, gcraHasRoom, gcraSpend } from './gcra';

const MINUTE = 60_000;

/** Spends one unit per call at `now`, keeping the state as a store would. */
function burst(limit: number, count: number, now = 1_000_000) {
  let tat: number | undefined;
  const admitted: boolean[] = [];
  for (let i = 0; i < count; i++) {
    const d = gcraSpend(tat, now, limit, MINUTE);
    if (d.admitted) tat = d.tat;
    admitted.push(d.admitted);
  }
  return { admitted, tat };
}

describe('GCRA window math', () => {
  it.each([1, 3, 7, 60, 1000])('admits exactly %i of a burst at one instant (no rounding loss)', (limit) => {
    const { admitted } = burst(limit, limit + 5);
    expect(admitted.filter(Boolean)).toHaveLength(limit);
    expect(admitted.slice(limit).every((a) => !a)).toBe(true);
  });

  it('counts down the remaining units and names the wait of a refused request', () => {
    let tat: number | undefined;
    const now = 5_000;
    const remaining = [];
    for (let i = 0; i < 3; i++) {
      const d = gcraSpend(tat, now, 3, MINUTE);
      tat = d.tat;
      remaining.push(d.remaining);
    }
    expect(remaining).toEqual([2, 1, 0]);
    const refused = gcraSpend(tat, now, 3, MINUTE);
    expect(refused).toMatchObject({ admitted: false, remaining: 0 });
    // One unit comes back every 20 s.
    expect(refused.waitMs).toBeCloseTo(20_000, 3);
    expect(gcraSpend(tat, now + 19_999, 3, MINUTE).admitted).toBe(false);
    expect(gcraSpend(tat, now + 20_000, 3, MINUTE).admitted).toBe(true);
  });

  it('never admits more than the limit across a window edge (unlike a fixed window)', () => {
    const { tat } = burst(10, 10, 59_000);
    // One second later a fixed window would have reset; here one unit per 6 s has come back.
    const later = gcraSpend(tat, 60_000, 10, MINUTE);
    expect(later.admitted).toBe(false);
    expect(gcraSpend(tat, 65_000, 10, MINUTE).admitted).toBe(true);
  });

  it('refills completely after an idle period, no further', () => {
    const { tat } = burst(5, 5, 0);
    expect(burst(5, 0).tat).toBeUndefined();
    const d = gcraSpend(tat, 10 * MINUTE, 5, MINUTE);
    expect(d).toMatchObject({ admitted: true, remaining: 4 });
  });

  it('tokens: room until the window is full; the charge may overshoot once, then it drains', () => {
    const now = 0;
    expect(gcraHasRoom(undefined, now, 100, MINUTE)).toMatchObject({ admitted: true, remaining: 100 });
    let tat = gcraCharge(undefined, now, 100, MINUTE, 60);
    expect(gcraHasRoom(tat, now, 100, MINUTE)).toMatchObject({ admitted: true, remaining: 40 });
    // A request admitted with 40 left used 90: the caller is 50 tokens over.
    tat = gcraCharge(tat, now, 100, MINUTE, 90);
    const refused = gcraHasRoom(tat, now, 100, MINUTE);
    expect(refused.admitted).toBe(false);
    // 50 tokens over at 600 ms per token: 30 s until there is room again.
    expect(refused.waitMs).toBeCloseTo(30_001, 3);
    expect(gcraHasRoom(tat, now + 30_001, 100, MINUTE).admitted).toBe(true);
  });
});
