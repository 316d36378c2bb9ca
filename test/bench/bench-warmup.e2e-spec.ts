import type { Subject } from '../../bench/subjects';

type Measure = typeof import('../../bench/measure');
/** bench/measure.ts loaded afresh: it reads BENCH_WARMUP_TURNS when loaded. */
function freshMeasure(): Measure {
  let loaded!: Measure;
  jest.isolateModules(() => {
    loaded = require('../../bench/measure') as Measure;
  });
  return loaded;
}

// Every measured subject is warmed the same way before the rounds (bench/measure.ts, warmUp): 200
// turns at 4 conversations, then BENCH_WARMUP_TURNS at 16, so V8's compilation of the hot
// functions is not counted as a turn's cost.

/** A subject whose turns count themselves and the most running at once. */
function countingSubject(): { subject: Subject; turns: () => number; mostAtOnce: () => number } {
  let turns = 0;
  let running = 0;
  let most = 0;
  const turn = async () => {
    turns++;
    most = Math.max(most, ++running);
    await new Promise((r) => setImmediate(r));
    running--;
    return 'id';
  };
  return { subject: { name: 'counting', url: '', proc: undefined as never, turn }, turns: () => turns, mostAtOnce: () => most };
}

describe('bench warm-up', () => {
  const saved = process.env.BENCH_WARMUP_TURNS;
  afterEach(() => {
    if (saved === undefined) delete process.env.BENCH_WARMUP_TURNS;
    else process.env.BENCH_WARMUP_TURNS = saved;
  });

  it.each([
    ['300', 500, 16, 'serves 200 turns at 4 conversations, then BENCH_WARMUP_TURNS at 16'],
    ['0', 200, 4, 'with BENCH_WARMUP_TURNS=0, only the first 200 turns'],
  ])('BENCH_WARMUP_TURNS=%s: %i turns, at most %i at once (%s)', async (warmupTurns, turns, atOnce) => {
    process.env.BENCH_WARMUP_TURNS = warmupTurns;
    const { warmUp } = freshMeasure();
    const c = countingSubject();
    await warmUp(c.subject);
    expect(c.turns()).toBe(turns);
    expect(c.mostAtOnce()).toBe(atOnce);
  });
});
