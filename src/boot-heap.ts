import { setFlagsFromString } from 'node:v8';

/** V8's default (flag-definitions.h): each time the young generation grows, it doubles. */
const DEFAULT_GROWTH_FACTOR = 2;
/** Flags by which an operator sizes the young generation: then theirs, not ours, apply. */
const OPERATOR_FLAGS = /--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/;

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
  if (holding || OPERATOR_FLAGS.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`)) return;
  setFlagsFromString('--semi-space-growth-factor=1');
  holding = true;
}

/** Lets the young generation grow again (the server listens); nothing when it was not held. */
export function releaseBootHeap(): void {
  if (!holding) return;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
  holding = false;
}
