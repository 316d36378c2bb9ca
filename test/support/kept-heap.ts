import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full garbage collection, in this process (V8's `gc`, switched on from here: no node flag needed). */
export function fullGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** V8's young-generation collection (a scavenge), in this process. */
export function minorGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as (options: { type: 'minor' | 'major' }) => void)({ type: 'minor' });
}

function oldSpaceUsed(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
}

/**
 * The bytes of the old generation each of `count` runs of `run` leaves behind after two
 * young-generation collections, when nothing `run` made is kept: what its short-lived objects cost
 * in promotion. An object survives a scavenge only while something reaches it, and is promoted on
 * its second: ~0 for objects that die young, the whole graph for ones something held (a WeakMap
 * entry's value keyed by one of them, which the scavenger keeps whatever its key).
 */
export function promotedBytesEach(run: () => void, count: number): number {
  fullGc();
  const before = oldSpaceUsed();
  for (let i = 0; i < count; i++) run();
  minorGc();
  minorGc();
  return (oldSpaceUsed() - before) / count;
}

/** The bytes of heap each of `count` values from `make` holds once a full GC has run: what keeping one costs. */
export function keptBytesEach(make: () => unknown, count: number): number {
  const kept = new Array<unknown>(count);
  fullGc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < count; i++) kept[i] = make();
  fullGc(); // what `make` made and did not return goes
  const after = process.memoryUsage().heapUsed;
  return kept.length ? (after - before) / kept.length : 0;
}
