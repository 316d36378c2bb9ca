import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full garbage collection, in this process (V8's `gc`, switched on from here: no node flag needed). */
export function fullGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
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
