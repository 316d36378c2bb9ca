import { resolve } from 'node:path';

/**
 * The soak's settings (docs/reliability.md), read once from the environment, and its one source of
 * chance: every choice is drawn from SOAK_SEED so a failing run can be replayed.
 *
 * SOAK_STORE (redis | postgres | dynamodb), SOAK_SEED (1), SOAK_REPLICAS (4), SOAK_CONVERSATIONS (500), SOAK_SECONDS (300),
 * SOAK_CLIENTS (32: turns in flight), SOAK_REPORT (soak-report.md), SOAK_FAULT_GAP_MS (5000).
 * SOAK_BREAK runs a test build (a copy of dist/ with one guarantee patched out of the Redis commit
 * script): `idempotency` (the Idempotency-Key claim skipped: a retried turn runs again) or `cas`
 * (the compare-and-set skipped). The checker must then report violations: the proof that it
 * catches real ones.
 */
export const ROOT = resolve(__dirname, '../../..');
export const SEED = Number(process.env.SOAK_SEED ?? 1);
export const REPLICAS = Number(process.env.SOAK_REPLICAS ?? 4);
export const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS ?? 500);
export const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
export const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 32);
export const REPORT = process.env.SOAK_REPORT ?? 'soak-report.md';
export const LEASE_MS = 3_000;
/** A retried turn (its answer lost) goes to another replica this many times at most. */
export const MAX_ATTEMPTS = 6;
export const REQUEST_TIMEOUT_MS = 30_000;
/** The chance that a follow-on is sent as a pair of concurrent turns on the same task (contention). */
export const HOT_PAIR = 0.1;
export const BREAK = process.env.SOAK_BREAK ?? '';
if (!['', 'idempotency', 'cas'].includes(BREAK)) throw new Error(`SOAK_BREAK: idempotency or cas, not ${BREAK}`);
export const STORE = process.env.SOAK_STORE ?? 'redis';
if (!['redis', 'postgres', 'dynamodb'].includes(STORE)) throw new Error(`SOAK_STORE: redis, postgres or dynamodb, not ${STORE}`);
if (BREAK && STORE !== 'redis') throw new Error('SOAK_BREAK patches the Redis commit script: use it with SOAK_STORE=redis');
/** The chance that a client drops its connection a few ms into a turn (then retries it with its key). */
export const DROP = 0.05;
/** Faults come every FAULT_GAP_MS to 3 × FAULT_GAP_MS (SOAK_FAULT_GAP_MS, 5 s). */
export const FAULT_GAP_MS = Number(process.env.SOAK_FAULT_GAP_MS ?? 5_000);

/** mulberry32: the soak's one source of chance, so a seed replays the same choices. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
/** The clients' chance (the model and the faults draw from seeds of their own). */
export const rand = random(SEED);
export const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
