import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** V8's default (flag-definitions.h): each time the young generation grows, it doubles. */
const DEFAULT_GROWTH_FACTOR = 2;
/** Flags by which an operator sizes the young generation: then theirs, not ours, apply. */
const OPERATOR_FLAGS = /--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/;

/** Whether node's command line or NODE_OPTIONS sizes the young generation (OPERATOR_FLAGS). */
function operatorSizesYoungGeneration(): boolean {
  return OPERATOR_FLAGS.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);
}

let holding = false;

/**
 * Keeps V8's young generation at its initial size while the server loads, from before its modules
 * load until it listens (`releaseBootHeap`). Loading the ~1,500 modules allocates short-lived
 * data fast enough that V8 grows the young generation to its maximum on the way (32-64 MiB of
 * semi-spaces); an idle server then keeps those pages resident although they hold next to
 * nothing (measured: 25 MiB of a 149 MiB idle RSS). After the release the young generation grows
 * as usual, so a server under load sizes it exactly as without this. Boot CPU time is unchanged
 * within noise (more, smaller scavenges; what boot allocates is mostly long-lived anyway).
 *
 * `--semi-space-growth-factor` is the one young-generation flag V8 reads at run time (the sizes
 * are fixed when the heap is set up). An operator's own sizing flags (in NODE_OPTIONS or on the
 * node command line) turn this off.
 */
export function holdBootHeap(): void {
  if (holding || operatorSizesYoungGeneration()) return;
  setFlagsFromString('--semi-space-growth-factor=1');
  holding = true;
}

/** Lets the young generation grow again (the server listens), up to YOUNG_GENERATION_CAP_BYTES; nothing when it was not held. */
export function releaseBootHeap(): void {
  if (!holding) return;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  holding = false;
  capYoungGeneration(YOUNG_GENERATION_CAP_BYTES);
}

/**
 * The young generation (both semi-spaces) of a server under load: 32 MiB, not V8's 128 MiB.
 *
 * Why: on a 64-bit machine V8 lets the young generation grow to 2 × 64 MiB. A server's turns
 * allocate briefly, but what a store or a cache keeps from each turn survives, and each scavenge
 * of a 128 MiB young generation copies all of it and walks every old-to-young pointer: measured
 * on a v3 turn (memory store, 16 conversations, `--trace-gc`), 18 ms pauses every ~250 ms, 0.8 s
 * of scavenging per 4,400 turns; with `--max-semi-space-size=16`, 0.5 s, CPU per turn ~15 % lower
 * and RSS under load ~90 MiB lower (8 MiB semi-spaces did no better than 16). This cap, which
 * works without a node flag, gave ~9 % (alternating rounds; issue 27, docs/configuration.md,
 * Start-up footprint).
 */
export const YOUNG_GENERATION_CAP_BYTES = 32 * 1024 * 1024;

let capObserver: PerformanceObserver | undefined;

/**
 * Keeps the young generation at most `capBytes` from now on. V8 fixes its maximum when the heap is
 * set up (`--max-semi-space-size`, which only a node flag can give), but reads its growth factor
 * at each growth: so after each scavenge the factor is 1 (no growth) while one more doubling would
 * pass the cap, 2 (V8's own) below it, so a young generation V8 shrank while idle grows again
 * under load. One flag write per change of state, never per GC. Nothing when an operator sizes
 * the young generation (OPERATOR_FLAGS).
 */
export function capYoungGeneration(capBytes: number): void {
  if (capObserver || operatorSizesYoungGeneration()) return;
  let capped = false;
  const check = () => {
    const size = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
    const cap = size * DEFAULT_GROWTH_FACTOR > capBytes;
    if (cap === capped) return;
    capped = cap;
    setFlagsFromString(`--semi-space-growth-factor=${cap ? 1 : DEFAULT_GROWTH_FACTOR}`);
  };
  capObserver = new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)) check();
  });
  capObserver.observe({ entryTypes: ['gc'] });
  check();
}
