import { setFlagsFromString } from 'node:v8';

/**
 * How hot a function must run before V8 compiles it with Turbofan, its optimizing compiler, once
 * the server listens: 1,000 invocations' worth of bytecode (`--invocation-count-for-turbofan`).
 *
 * Why: left to its own heuristics, V8 (13.6, in Node 24) compiled the functions of a turn (Node's
 * HTTP parser callbacks and socket writes, the Express router, ours) with Maglev early but with
 * Turbofan only after ~10,000 turns at 16 conversations, in one burst of ~130 compilations and
 * ~0.9 s of compiler time in a 2,000-turn window (`--trace-opt`), a replica's CPU per turn well
 * above its steady state until then. Setting the count explicitly tiers up far sooner, even at its
 * nominal default of 3,000 (measured; V8's tiering heuristics hold such functions back longer than
 * that value says when it is left unset; test/e2e/tier-up.e2e-spec.ts measures the effect): with
 * 1,000 the same compilations happen within the first ~3,000 turns and cost less in all (1.34 s
 * against 1.61 s of compiler time over turns 1,000-15,000). The steady state is the same code.
 * Measured: CPU per turn over turns 5,000-18,000 ~14 % lower (alternating rounds of 1,600 turns,
 * median pair ratio 0.82; issue 27, docs/performance.md). Boot code is not affected: the count
 * changes once the server listens.
 */
export const TURBOFAN_INVOCATIONS = 1000;

/** Flags by which an operator steers V8's tiering: then theirs, not ours, apply. */
const OPERATOR_FLAGS = /--(invocation[-_]count[-_]for[-_]turbofan|(no[-_])?turbofan|jitless|max[-_]lazy|interrupt[-_]budget)\b/;

/** Whether node's command line or NODE_OPTIONS steers tiering (OPERATOR_FLAGS). */
export function operatorSteersTiering(nodeFlags = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`): boolean {
  return OPERATOR_FLAGS.test(nodeFlags);
}

let applied = false;

/** Lowers Turbofan's invocation count to TURBOFAN_INVOCATIONS (once; nothing when an operator steers tiering). */
export function tierUpSooner(): void {
  if (applied || operatorSteersTiering()) return;
  setFlagsFromString(`--invocation-count-for-turbofan=${TURBOFAN_INVOCATIONS}`);
  applied = true;
}
