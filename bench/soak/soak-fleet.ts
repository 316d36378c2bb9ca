import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/support/services';
import { LIBFAKETIME } from '../../test/support/faketime';
import { Proc, spawnServer } from '../processes';
import { BREAK, LEASE_MS, ROOT, STORE } from './soak-config';
import { TOOLS_PLUGIN } from './soak-tools';

/** One replica of the fleet: its port stays across restarts (clients keep calling it while it is down). */
export interface Replica {
  index: number;
  port: number;
  child?: ChildProcess;
  proc?: Proc;
  up: boolean;
  /** Running with its clock ahead (libfaketime), since its last start. */
  skewed?: boolean;
}

/** How far a skewed replica's clock runs ahead (libfaketime's FAKETIME): ten leases. */
export const CLOCK_SKEW = '+30s';
/** A replica sent SIGTERM gets this long to finish what runs (TA_SHUTDOWN_GRACE_MS); spawnServer's stop() kills it 5 s after the signal. */
const SHUTDOWN_GRACE_MS = 4_000;

/** A pause not decided within this many seconds ends Canceled, reason expired (the clients let some expire). */
export const APPROVAL_TTL_SECONDS = 2;

/**
 * The soak's agents: its tools (soak-tools.ts) with approvals that expire; no history limit (the
 * checker counts the model's input). `Soak` refuses a follow-on while its task is busy (409),
 * `SoakQueue` queues it (on_busy: enqueue).
 */
const agent = (name: string, onBusy: string) => `apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: The soak's agent (a follow-on while busy is ${onBusy === 'reject' ? 'refused' : 'queued'})
spec:
  governance:
    approval_ttl_seconds: ${APPROVAL_TTL_SECONDS}
  concurrency:
    on_busy: ${onBusy}
  agent:
    name: default
    model: soak-model
    system_prompt: Be brief.
    plugins: [SoakTools]
`;

/** A directory of the soak's agents and their plugin module, for `serve`. */
export function writeAgents(): string {
  const dir = mkdtempSync(join(tmpdir(), 'soak-agents-'));
  writeFileSync(join(dir, 'soak.yaml'), agent('Soak', 'reject'));
  writeFileSync(join(dir, 'soak-queue.yaml'), agent('SoakQueue', 'enqueue'));
  writeFileSync(join(dir, 'custom_plugins.js'), TOOLS_PLUGIN);
  return dir;
}

/** What each SOAK_BREAK patches out of the compiled Redis commit script. */
const BREAKS: Record<string, [string, string][]> = {
  idempotency: [["if ARGV[14] ~= '' then", 'if false then -- (Idempotency-Key claim removed: SOAK_BREAK)']],
  cas: [
    ["if actual ~= expected then return { 'conflict', actual } end", '-- (compare-and-set removed: SOAK_BREAK)'],
    ["if ARGV[10] ~= '' and cur[4] ~= ARGV[10] then return { 'conflict', actual } end", '-- (write-id check removed: SOAK_BREAK)'],
  ],
};
export const BROKEN_DIST = join(ROOT, '.soak-broken-dist');

/**
 * Patches `kind`'s guarantee out of the Redis commit script of the built server in `dist` (a copy):
 * in the script's module, and in the one-file server (dist/cli.js, scripts/bundle-vendor.mjs),
 * which holds its own copy of it. Patching the module alone left the bundle's script whole: such a
 * "test build" kept every guarantee, and its soak found nothing. A cli.js built by tsc alone
 * requires the module instead; a bundle that holds part of the script must hold all of it.
 */
export function breakBuild(dist: string, kind: string): void {
  const script = join(dist, 'state', 'backends', 'redis', 'redis-commit.lua.js');
  const bundle = join(dist, 'cli.js');
  for (const file of [script, bundle]) {
    let source = readFileSync(file, 'utf8');
    if (file === bundle && !BREAKS[kind]!.some(([from]) => source.includes(from))) continue;
    for (const [from, to] of BREAKS[kind]!) {
      if (!source.includes(from)) throw new Error(`SOAK_BREAK=${kind}: "${from}" is not in ${file}`);
      source = source.replace(from, to);
    }
    writeFileSync(file, source);
  }
}

/** The server to run: dist/, or with SOAK_BREAK a patched copy of it beside dist/ (so its requires find node_modules/). */
export function serverEntry(): string {
  if (!BREAK) return join(ROOT, 'bin', 'teal-agent-server.js');
  rmSync(BROKEN_DIST, { recursive: true, force: true });
  cpSync(join(ROOT, 'dist'), BROKEN_DIST, { recursive: true });
  breakBuild(BROKEN_DIST, BREAK);
  const entry = join(BROKEN_DIST, 'soak-entry.js');
  writeFileSync(entry, `require('./cli.js').runCli(process.argv.slice(2));\n`);
  return entry;
}

export interface Fleet {
  replicas: Replica[];
  /** Starts (or restarts) a replica on its port, its clock skewed ahead or not; resolves once it answers. */
  start(r: Replica, skewed?: boolean): Promise<void>;
  stop(): void;
}

/** `count` replicas of `entry` serving the agents of `dir` on one store (`storeEnv`), one model (`modelUrl`) and one tool counter (`counterUrl`). */
export async function startFleet(
  entry: string,
  dir: string,
  count: number,
  storeEnv: Record<string, string>,
  modelUrl: string,
  counterUrl: string,
): Promise<Fleet> {
  const env = {
    SOAK_COUNTER_URL: counterUrl,
    PATH: process.env.PATH ?? '',
    TA_AUTH_MODE: 'dev',
    TA_HOST: '127.0.0.1',
    TA_LOG_LEVEL: 'warn',
    ...storeEnv,
    TA_BASE_URL: modelUrl,
    TA_API_KEY: 'sk-soak',
    TA_LLM_MAX_RETRIES: '1',
    TA_TASK_LEASE_MS: String(LEASE_MS),
    TA_LEASE_SWEEP_MS: '500',
    TA_SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
  };
  const replicas: Replica[] = [];
  for (let i = 0; i < count; i++) replicas.push({ index: i, port: await freePort(), up: false });
  const start = async (r: Replica, skewed = false) => {
    if (skewed && !LIBFAKETIME) throw new Error('a clock-skew fault needs libfaketime: apt-get install faketime');
    // libfaketime preloaded into node itself (as test/e2e/lease-clock-skew does): every wall-clock read of the replica runs ahead.
    const skew = skewed ? { LD_PRELOAD: LIBFAKETIME!, FAKETIME: CLOCK_SKEW } : {};
    const proc = await spawnServer([entry, 'serve', dir, '--port', String(r.port)], { ...env, ...skew }, `http://127.0.0.1:${r.port}/Soak/1/health/live`);
    r.proc = proc;
    r.child = proc.child;
    r.skewed = skewed;
    r.up = true;
  };
  // DynamoDB: the first replica creates the table, the others find it.
  if (STORE === 'dynamodb') for (const r of replicas) await start(r);
  else await Promise.all(replicas.map((r) => start(r)));
  return {
    replicas,
    start,
    stop: () => {
      for (const r of replicas) r.child?.kill('SIGKILL');
    },
  };
}
