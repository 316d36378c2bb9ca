import { setTimeout as sleep } from 'node:timers/promises';
import { FAULT_GAP_MS, random, SEED } from './soak-config';
import { CLOCK_SKEW, Fleet, Replica } from './soak-fleet';
import type { SoakStore } from './soak-store';

/** A fault as the report lists it: its kind, when it began and ended, and what it hit (`replica`: the one killed, drained or skewed). */
export interface Fault {
  kind: string;
  at: number;
  until: number;
  detail: string;
  replica?: number;
}

export const KILL = 'kill -9 and restart';
export const DRAIN = 'SIGTERM (drain), restart after it exits';
export const SKEW = `clock skewed ${CLOCK_SKEW} (libfaketime), restarted so after a drain`;

/** The faults and their weights (out of 100). */
const WEIGHTS = { kill: 35, drain: 15, skew: 10, stall: 25, restart: 15 };
type FaultKind = keyof typeof WEIGHTS;

/**
 * The fault kinds to draw from: SOAK_FAULTS (a comma-separated subset of kill, drain, skew, stall,
 * restart), else all; restart only where the store can restart (not DynamoDB Local, which keeps its
 * data in memory only).
 */
function faultKinds(store: SoakStore): FaultKind[] {
  const all = Object.keys(WEIGHTS) as FaultKind[];
  const asked = process.env.SOAK_FAULTS ? (process.env.SOAK_FAULTS.split(',').map((k) => k.trim()) as FaultKind[]) : all;
  const unknown = asked.filter((k) => !all.includes(k));
  if (unknown.length) throw new Error(`SOAK_FAULTS: ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return asked.filter((k) => k !== 'restart' || store.restart);
}

/**
 * Faults at random (drawn from a seed of their own) until 10 s before the deadline, one at a time,
 * every FAULT_GAP_MS to 3 × FAULT_GAP_MS, by WEIGHTS: kill -9 of a replica and its restart, a
 * SIGTERM drain and restart, a replica drained and restarted with its clock skewed ahead (it stays
 * so until another fault restarts it), the store stalled, or the store restarted.
 */
export async function runFaults(fleet: Fleet, store: SoakStore, deadline: number, faults: Fault[]): Promise<void> {
  const faultRand = random(SEED * 104729);
  const kinds = faultKinds(store);
  const total = kinds.reduce((n, k) => n + WEIGHTS[k], 0);
  const draw = (): FaultKind => {
    let roll = faultRand() * total;
    for (const k of kinds) if ((roll -= WEIGHTS[k]) < 0) return k;
    return kinds[kinds.length - 1]!;
  };
  const pickReplica = () => fleet.replicas[Math.floor(faultRand() * fleet.replicas.length)]!;
  while (kinds.length && Date.now() < deadline - 10_000) {
    await sleep(FAULT_GAP_MS + Math.floor(faultRand() * 2 * FAULT_GAP_MS));
    const kind = draw();
    const at = Date.now();
    if (kind === 'kill') {
      const r = pickReplica();
      r.up = false;
      r.child?.kill('SIGKILL');
      await sleep(1_000 + Math.floor(faultRand() * 2_000));
      await fleet.start(r);
      faults.push({ kind: KILL, at, until: Date.now(), detail: `replica ${r.index}`, replica: r.index });
    } else if (kind === 'drain' || kind === 'skew') {
      // A drain: the replica stops taking requests and finishes what runs; then a restart, skewed or not.
      const r = pickReplica();
      const ms = await drain(r);
      await fleet.start(r, kind === 'skew');
      faults.push({
        kind: kind === 'skew' ? SKEW : DRAIN,
        at,
        until: Date.now(),
        detail: `replica ${r.index}, exited ${ms} ms after SIGTERM`,
        replica: r.index,
      });
    } else if (kind === 'stall') {
      const ms = 500 + Math.floor(faultRand() * 1_500);
      faults.push({ kind: await store.stall(ms, faultRand), at, until: Date.now(), detail: `${ms} ms` });
    } else {
      const ms = 300 + Math.floor(faultRand() * 1_200);
      faults.push({ kind: await store.restart!(ms), at, until: Date.now(), detail: `down ${ms} ms` });
    }
  }
}

/** SIGTERM, and the time until the replica exited (spawnServer's stop(): SIGKILL 5 s after, past its shutdown grace). */
async function drain(r: Replica): Promise<number> {
  const at = Date.now();
  r.up = false;
  await r.proc?.stop();
  return Date.now() - at;
}
