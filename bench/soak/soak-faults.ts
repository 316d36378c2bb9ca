import { setTimeout as sleep } from 'node:timers/promises';
import { FAULT_GAP_MS, random, SEED } from './soak-config';
import type { Fleet } from './soak-fleet';
import type { SoakStore } from './soak-store';

/** A fault as the report lists it: its kind, when it began and ended, and what it hit. */
export interface Fault {
  kind: string;
  at: number;
  until: number;
  detail: string;
}

/**
 * Faults at random (drawn from a seed of their own) until 10 s before the deadline, one at a time,
 * every FAULT_GAP_MS to 3 × FAULT_GAP_MS: kill -9 of a replica and its restart (60 %), or the store
 * stalled (40 %).
 */
export async function runFaults(fleet: Fleet, store: SoakStore, deadline: number, faults: Fault[]): Promise<void> {
  const faultRand = random(SEED * 104729);
  while (Date.now() < deadline - 10_000) {
    await sleep(FAULT_GAP_MS + Math.floor(faultRand() * 2 * FAULT_GAP_MS));
    const roll = faultRand();
    if (roll < 0.6) {
      const r = fleet.replicas[Math.floor(faultRand() * fleet.replicas.length)]!;
      const at = Date.now();
      r.up = false;
      r.child?.kill('SIGKILL');
      await sleep(1_000 + Math.floor(faultRand() * 2_000));
      await fleet.start(r);
      faults.push({ kind: 'kill -9 and restart', at, until: Date.now(), detail: `replica ${r.index}` });
    } else {
      const ms = 500 + Math.floor(faultRand() * 1_500);
      const at = Date.now();
      const kind = await store.stall(ms, faultRand);
      faults.push({ kind, at, until: Date.now(), detail: `${ms} ms` });
    }
  }
}
