import { conversationOf, followOns, measureLoad, Measured } from './measure';
import { Subject } from './subjects';

export interface Sizes {
  c1Requests: number;
  c16Requests: number;
  historyTurns: number;
  historySamples: number;
  rounds: number;
}

export interface Cells {
  c1: Measured;
  c16: Measured;
  /** Follow-ons on a conversation of `historyTurns` turns (+ `historySamples` per earlier round). */
  history: Measured;
}

export interface Round {
  baseline: Cells;
  ours: Cells;
}

/**
 * The baseline and our server measured as neighbours, round after round (baseline, ours, baseline,
 * …, both running): a shared 2-core machine drifts between minutes, so only ratios of neighbours
 * are compared. Both long conversations are built once and grow alike, by the samples of each round.
 */
export async function alternatingRounds(baseline: Subject, ours: Subject, sizes: Sizes): Promise<Round[]> {
  const longB = await conversationOf(baseline, sizes.historyTurns);
  const longO = await conversationOf(ours, sizes.historyTurns);
  const rounds: Round[] = [];
  for (let round = 1; round <= sizes.rounds; round++) {
    process.stderr.write(`  round ${round}/${sizes.rounds}\n`);
    const b1 = await measureLoad(baseline, 1, sizes.c1Requests);
    const o1 = await measureLoad(ours, 1, sizes.c1Requests);
    const b16 = await measureLoad(baseline, 16, sizes.c16Requests);
    const o16 = await measureLoad(ours, 16, sizes.c16Requests);
    const bh = await followOns(baseline, longB, sizes.historySamples);
    const oh = await followOns(ours, longO, sizes.historySamples);
    rounds.push({ baseline: { c1: b1, c16: b16, history: bh }, ours: { c1: o1, c16: o16, history: oh } });
  }
  return rounds;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The issue-14 targets: each a ratio ours ÷ baseline of one round, its limit and direction. */
export const TARGETS: { label: string; ratio: (r: Round) => number; limit: number; atLeast?: boolean }[] = [
  { label: 'CPU per turn at c=16', ratio: (r) => r.ours.c16.cpuMsPerTurn / r.baseline.c16.cpuMsPerTurn, limit: 2.0 },
  { label: 'CPU per turn at c=1', ratio: (r) => r.ours.c1.cpuMsPerTurn / r.baseline.c1.cpuMsPerTurn, limit: 1.8 },
  { label: 'throughput at c=16', ratio: (r) => r.ours.c16.throughput / r.baseline.c16.throughput, limit: 0.5, atLeast: true },
  { label: 'p50 at c=1', ratio: (r) => r.ours.c1.p50 / r.baseline.c1.p50, limit: 2.0 },
  { label: 'p50 at c=16', ratio: (r) => r.ours.c16.p50 / r.baseline.c16.p50, limit: 2.0 },
  { label: 'follow-on p50 on the long conversation', ratio: (r) => r.ours.history.p50 / r.baseline.history.p50, limit: 1.5 },
];
