import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as PgClient } from 'pg';
import { dynamoDbServerEnv, freePort, startDynamoDbLocal, startPostgresServer, startRedisServer } from '../../test/support/services';
import { startTcpProxy } from '../../test/support/tcp-proxy';
import { percentiles } from '../load';
import { spawnServer } from '../processes';
import { Attempt, checkHistory, FinalRead, formatViolations, Operation, StoredTask } from './soak-checker';

/**
 * `npm run soak` (docs/reliability.md): a fleet of replicas of the built server on one Redis, a
 * model that fails and stalls at random, clients over many conversations, and faults at random
 * (kill -9 of a replica and its restart, the store paused), all drawn from one seed; then the
 * independent checker (soak-checker.ts) over what the clients saw and what the store holds, and a
 * report. Exits 1 on any violation.
 *
 * SOAK_STORE (redis | postgres | dynamodb), SOAK_SEED (1), SOAK_REPLICAS (4), SOAK_CONVERSATIONS (500), SOAK_SECONDS (300),
 * SOAK_CLIENTS (32: turns in flight), SOAK_REPORT (soak-report.md), SOAK_FAULT_GAP_MS (5000).
 * SOAK_BREAK runs a test build (a copy of dist/ with one guarantee patched out of the Redis commit
 * script): `idempotency` (the Idempotency-Key claim skipped: a retried turn runs again) or `cas`
 * (the compare-and-set skipped). The checker must then report violations: the proof that it
 * catches real ones.
 */
const ROOT = resolve(__dirname, '../../..');
const SEED = Number(process.env.SOAK_SEED ?? 1);
const REPLICAS = Number(process.env.SOAK_REPLICAS ?? 4);
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS ?? 500);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 32);
const REPORT = process.env.SOAK_REPORT ?? 'soak-report.md';
const LEASE_MS = 3_000;
/** A retried turn (its answer lost) goes to another replica this many times at most. */
const MAX_ATTEMPTS = 6;
const REQUEST_TIMEOUT_MS = 30_000;
/** The chance that a follow-on is sent as a pair of concurrent turns on the same task (contention). */
const HOT_PAIR = 0.1;
const BREAK = process.env.SOAK_BREAK ?? '';
if (!['', 'idempotency', 'cas'].includes(BREAK)) throw new Error(`SOAK_BREAK: idempotency or cas, not ${BREAK}`);
const STORE = process.env.SOAK_STORE ?? 'redis';
if (!['redis', 'postgres', 'dynamodb'].includes(STORE)) throw new Error(`SOAK_STORE: redis, postgres or dynamodb, not ${STORE}`);
if (BREAK && STORE !== 'redis') throw new Error('SOAK_BREAK patches the Redis commit script: use it with SOAK_STORE=redis');
/** The chance that a client drops its connection a few ms into a turn (then retries it with its key). */
const DROP = 0.05;
/** Faults come every FAULT_GAP_MS to 3 × FAULT_GAP_MS (SOAK_FAULT_GAP_MS, 5 s). */
const FAULT_GAP_MS = Number(process.env.SOAK_FAULT_GAP_MS ?? 5_000);

/** mulberry32: the soak's one source of chance, so a seed replays the same choices. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = random(SEED);
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;

/** The model: answers at once mostly, sometimes slowly, with a 500 or a 429 (the servers retry once). */
async function startModel(): Promise<{ url: string; server: Server; counts: Record<string, number> }> {
  const counts: Record<string, number> = { ok: 0, '500': 0, '429': 0, slow: 0 };
  const chance = random(SEED * 7919);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const roll = chance();
      if (roll < 0.03) {
        counts['500']!++;
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"injected"}}');
        return;
      }
      if (roll < 0.05) {
        counts['429']!++;
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '50' }).end('{"error":{"message":"slow down"}}');
        return;
      }
      const delay = roll < 0.15 ? 100 + Math.floor(chance() * 900) : 0;
      if (delay) counts.slow!++;
      counts.ok!++;
      setTimeout(() => {
        const body = {
          id: 'soak',
          object: 'chat.completion',
          created: 0,
          model: 'soak',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        };
        if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }, delay);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, counts };
}

interface Replica {
  index: number;
  port: number;
  child?: ChildProcess;
  up: boolean;
}

const AGENT = `apiVersion: tealagents/v1alpha1
name: Soak
version: 1
description: The soak's agent
spec:
  agent:
    name: default
    model: soak-model
    system_prompt: Be brief.
`;

/** The shared store of the fleet: its server, the replicas' environment, and its stall fault. */
interface SoakStore {
  env: Record<string, string>;
  /** Stalls the store for `ms` (resolves when it answers again); returns the fault's name. */
  stall(ms: number, chance: () => number): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Redis: `CLIENT PAUSE` (all commands, or writes only: reads go on, commits wait). PostgreSQL:
 * SIGSTOP of every client backend, SIGCONT after. DynamoDB Local: a proxy before it holds what the
 * replicas send (their calls hang unanswered), then passes it on.
 */
async function startStore(): Promise<SoakStore> {
  if (STORE === 'redis') {
    const redis = await startRedisServer();
    return {
      env: { TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url },
      async stall(ms, chance) {
        const mode = chance() < 0.5 ? 'ALL' : 'WRITE';
        await redisCommand(redis.url, `CLIENT PAUSE ${ms} ${mode}`);
        await sleep(ms);
        return mode === 'ALL' ? 'store paused (CLIENT PAUSE ALL)' : 'store writes paused (CLIENT PAUSE WRITE)';
      },
      stop: () => redis.stop(),
    };
  }
  if (STORE === 'postgres') {
    const pg = await startPostgresServer();
    const admin = new PgClient({ connectionString: pg.url });
    await admin.connect();
    return {
      env: { TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: pg.url, TA_POSTGRES_SCHEMA: 'soak' },
      async stall(ms) {
        const { rows } = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        );
        for (const { pid } of rows) process.kill(pid, 'SIGSTOP');
        await sleep(ms);
        for (const { pid } of rows) process.kill(pid, 'SIGCONT');
        return 'store backends stopped (SIGSTOP, then SIGCONT, of every client backend)';
      },
      stop: async () => {
        await admin.end();
        await pg.stop();
      },
    };
  }
  const ddb = await startDynamoDbLocal();
  const proxy = await startTcpProxy(ddb.port);
  return {
    env: { ...dynamoDbServerEnv('soak', `http://127.0.0.1:${proxy.port}`), TA_DYNAMODB_CREATE_TABLE: 'true' },
    async stall(ms) {
      proxy.hold();
      await sleep(ms);
      proxy.release();
      return 'store calls held (a proxy before DynamoDB Local)';
    },
    stop: async () => {
      await proxy.close();
      await ddb.stop();
    },
  };
}

/** What each SOAK_BREAK patches out of the compiled Redis commit script. */
const BREAKS: Record<string, [string, string][]> = {
  idempotency: [["if ARGV[14] ~= '' then", 'if false then -- (Idempotency-Key claim removed: SOAK_BREAK)']],
  cas: [
    ["if actual ~= expected then return { 'conflict', actual } end", '-- (compare-and-set removed: SOAK_BREAK)'],
    ["if ARGV[10] ~= '' and cur[4] ~= ARGV[10] then return { 'conflict', actual } end", '-- (write-id check removed: SOAK_BREAK)'],
  ],
};
const BROKEN_DIST = join(ROOT, '.soak-broken-dist');

/** The server to run: dist/, or with SOAK_BREAK a patched copy of it beside dist/ (so its requires find node_modules/). */
function serverEntry(): string {
  if (!BREAK) return join(ROOT, 'bin', 'teal-agent-server.js');
  rmSync(BROKEN_DIST, { recursive: true, force: true });
  cpSync(join(ROOT, 'dist'), BROKEN_DIST, { recursive: true });
  const script = join(BROKEN_DIST, 'state', 'backends', 'redis', 'redis-commit.lua.js');
  let source = readFileSync(script, 'utf8');
  for (const [from, to] of BREAKS[BREAK]!) {
    if (!source.includes(from)) throw new Error(`SOAK_BREAK=${BREAK}: "${from}" is not in ${script}`);
    source = source.replace(from, to);
  }
  writeFileSync(script, source);
  const entry = join(BROKEN_DIST, 'soak-entry.js');
  writeFileSync(entry, `require('./cli.js').runCli(process.argv.slice(2));\n`);
  return entry;
}

async function main(): Promise<void> {
  const entry = serverEntry();
  const store = await startStore();
  const model = await startModel();
  const dir = mkdtempSync(join(tmpdir(), 'soak-agents-'));
  writeFileSync(join(dir, 'soak.yaml'), AGENT);
  const env = {
    PATH: process.env.PATH ?? '',
    TA_AUTH_MODE: 'dev',
    TA_HOST: '127.0.0.1',
    TA_LOG_LEVEL: 'warn',
    ...store.env,
    TA_BASE_URL: model.url,
    TA_API_KEY: 'sk-soak',
    TA_LLM_MAX_RETRIES: '1',
    TA_TASK_LEASE_MS: String(LEASE_MS),
    TA_LEASE_SWEEP_MS: '500',
  };
  const replicas: Replica[] = [];
  for (let i = 0; i < REPLICAS; i++) replicas.push({ index: i, port: await freePort(), up: false });
  const start = async (r: Replica) => {
    const proc = await spawnServer([entry, 'serve', dir, '--port', String(r.port)], env, `http://127.0.0.1:${r.port}/Soak/1/health/live`);
    r.child = proc.child;
    r.up = true;
  };
  // DynamoDB: the first replica creates the table, the others find it.
  if (STORE === 'dynamodb') for (const r of replicas) await start(r);
  else await Promise.all(replicas.map(start));

  const operations: Operation[] = [];
  const taskOf = new Map<string, string>();
  const turnsOf = new Map<string, number>();
  const faults: { kind: string; at: number; until: number; detail: string }[] = [];
  const startedAt = Date.now();
  const deadline = startedAt + SECONDS * 1000;

  /** One attempt of a turn on one replica: what the client saw. */
  async function attempt(replica: Replica, op: Operation, key: string, body: object): Promise<Attempt> {
    const begun = Date.now();
    try {
      const res = await fetch(`http://127.0.0.1:${replica.port}/Soak/1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-dev-user': op.user },
        body: JSON.stringify(body),
        // Now and then the client gives up a few ms in (its answer lost): it sends the turn again.
        signal: AbortSignal.timeout(rand() < DROP ? 2 + Math.floor(rand() * 40) : REQUEST_TIMEOUT_MS),
      });
      const json = (await res.json().catch(() => ({}))) as { task_id?: string; status?: unknown; code?: string };
      // A StateResponse's status (Completed…), or a problem's code (its `status` is the HTTP one).
      const outcome = typeof json.status === 'string' ? json.status : json.code;
      return { replica: replica.index, startedAt: begun, endedAt: Date.now(), status: res.status, taskId: json.task_id, outcome };
    } catch (err) {
      const error = (err as Error).name === 'TimeoutError' ? 'dropped by the client' : (err as Error).message;
      return { replica: replica.index, startedAt: begun, endedAt: Date.now(), status: 0, error };
    }
  }

  /**
   * A turn: sent to a random replica, retried with the same key on another while no answer comes,
   * or the task is busy. Now and then (HOT_PAIR) two turns at once on the same task: both must land,
   * once each, in either order (they share an index: the checker does not order them).
   */
  async function turn(conversation: string): Promise<void> {
    const index = turnsOf.get(conversation) ?? 0;
    turnsOf.set(conversation, index + 1);
    if (index > 0 && taskOf.has(conversation) && rand() < HOT_PAIR) {
      await Promise.all([send(conversation, index, 'a'), send(conversation, index, 'b')]);
      return;
    }
    await send(conversation, index, '');
  }

  async function send(conversation: string, index: number, part: string): Promise<void> {
    const op: Operation = {
      id: `op-${operations.length}`,
      conversation,
      user: `user-${conversation}`,
      kind: index === 0 ? 'first' : 'follow-on',
      text: `soak ${SEED} ${conversation} turn ${index}${part}`,
      index,
      attempts: [],
    };
    operations.push(op);
    const key = randomUUID();
    // One body for every attempt: a retry under the key must be the same request (else 422 IDEMPOTENCY_KEY_REUSED).
    const taskId = taskOf.get(conversation);
    const body = { items: [{ content_type: 'text', content: op.text }], ...(taskId ? { task_id: taskId } : {}) };
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const a = await attempt(pick(replicas), op, key, body);
      op.attempts.push(a);
      if (a.taskId && !taskOf.has(conversation)) taskOf.set(conversation, a.taskId);
      // No answer (a replica killed or down), or the task held by a request that has not ended yet: again, elsewhere.
      if (a.status === 0 || a.status === 409 || a.status === 503) {
        await sleep(200 + Math.floor(rand() * 300));
        continue;
      }
      return;
    }
  }

  const conversations = Array.from({ length: CONVERSATIONS }, (_, i) => `c${i}`);
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    // Each client owns the conversations c, c + CLIENTS, …: one turn at a time on each.
    const mine = conversations.filter((_, i) => i % CLIENTS === c);
    while (Date.now() < deadline) await turn(pick(mine));
  });

  const chaos = (async () => {
    const faultRand = random(SEED * 104729);
    while (Date.now() < deadline - 10_000) {
      await sleep(FAULT_GAP_MS + Math.floor(faultRand() * 2 * FAULT_GAP_MS));
      const roll = faultRand();
      if (roll < 0.6) {
        const r = replicas[Math.floor(faultRand() * replicas.length)]!;
        const at = Date.now();
        r.up = false;
        r.child?.kill('SIGKILL');
        await sleep(1_000 + Math.floor(faultRand() * 2_000));
        await start(r);
        faults.push({ kind: 'kill -9 and restart', at, until: Date.now(), detail: `replica ${r.index}` });
      } else {
        const ms = 500 + Math.floor(faultRand() * 1_500);
        const at = Date.now();
        const kind = await store.stall(ms, faultRand);
        faults.push({ kind, at, until: Date.now(), detail: `${ms} ms` });
      }
    }
  })();

  await Promise.all([...clients, chaos]);
  // Quiesce: every lease a killed replica held has lapsed and been swept.
  await sleep(LEASE_MS * 2 + 1_000);

  const readAt = Date.now();
  const reads: FinalRead[] = [];
  for (const conversation of conversations) {
    const taskId = taskOf.get(conversation);
    if (!taskId) continue;
    const r = pick(replicas.filter((x) => x.up));
    const own = await fetch(`http://127.0.0.1:${r.port}/Soak/1/tasks/${taskId}`, { headers: { 'x-dev-user': `user-${conversation}` } });
    const stranger = await fetch(`http://127.0.0.1:${r.port}/Soak/1/tasks/${taskId}`, { headers: { 'x-dev-user': 'someone-else' } });
    await stranger.arrayBuffer();
    reads.push({
      conversation,
      taskId,
      task: own.status === 200 ? ((await own.json()) as StoredTask) : (await own.arrayBuffer(), null),
      strangerStatus: stranger.status,
    });
  }
  const violations = checkHistory(operations, reads, { readAt, runningLimitMs: LEASE_MS + 5_000 });

  const report = reportOf(operations, faults, model.counts, violations, startedAt);
  writeFileSync(REPORT, report);
  process.stdout.write(report);

  for (const r of replicas) r.child?.kill('SIGKILL');
  if (BREAK) rmSync(BROKEN_DIST, { recursive: true, force: true });
  model.server.close();
  await store.stop();
  process.exitCode = violations.length ? 1 : 0;
}

/** One command on a connection of its own (CLIENT PAUSE must not wait behind anything). */
function redisCommand(url: string, command: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(`${command}\r\n`));
    socket.once('data', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

/** Violations listed one by one in the report (all are counted by rule). */
const SHOWN_VIOLATIONS = 50;

function violationsByRule(violations: ReturnType<typeof checkHistory>): string {
  const counts = new Map<string, number>();
  for (const v of violations) counts.set(v.rule, (counts.get(v.rule) ?? 0) + 1);
  return ['| rule | violations |', '|---|---|', ...[...counts].map(([rule, n]) => `| ${rule} | ${n} |`)].join('\n');
}

function reportOf(
  operations: Operation[],
  faults: { kind: string; at: number; until: number; detail: string }[],
  model: Record<string, number>,
  violations: ReturnType<typeof checkHistory>,
  startedAt: number,
): string {
  const attempts = operations.flatMap((o) => o.attempts);
  const byStatus = new Map<string, number>();
  for (const a of attempts)
    byStatus.set(
      a.status ? `${a.status} ${a.outcome ?? ''}`.trim() : `no answer`,
      (byStatus.get(a.status ? `${a.status} ${a.outcome ?? ''}`.trim() : 'no answer') ?? 0) + 1,
    );
  const inFault = (a: Attempt) => faults.some((f) => a.startedAt < f.until + LEASE_MS && a.endedAt > f.at);
  const latency = (xs: Attempt[]) => {
    const p = percentiles(xs.filter((a) => a.status === 200).map((a) => a.endedAt - a.startedAt));
    return `p50 ${p.p50?.toFixed(0)} ms, p99 ${p.p99?.toFixed(0)} ms (${xs.length} attempts)`;
  };
  const answered = operations.filter((o) => o.attempts.some((a) => a.status === 200));
  const failed = operations.length - answered.length;
  const faultKinds = new Map<string, number>();
  for (const f of faults) faultKinds.set(f.kind, (faultKinds.get(f.kind) ?? 0) + 1);
  return [
    `# Soak report`,
    '',
    `${BREAK ? `**A test build with a guarantee removed (SOAK_BREAK=${BREAK}).** ` : ''}Seed ${SEED}, ${REPLICAS} replicas on ${STORE}, ${CONVERSATIONS} conversations, ${CLIENTS} clients, ${((Date.now() - startedAt) / 1000).toFixed(0)} s (${new Date().toISOString()}).`,
    `Replay: \`SOAK_STORE=${STORE} SOAK_SEED=${SEED} SOAK_REPLICAS=${REPLICAS} SOAK_CONVERSATIONS=${CONVERSATIONS} SOAK_CLIENTS=${CLIENTS} SOAK_SECONDS=${SECONDS} npm run soak\`.`,
    '',
    `## Operations`,
    '',
    `| kind | turns |`,
    `|---|---|`,
    `| first turn | ${operations.filter((o) => o.kind === 'first').length} |`,
    `| follow-on | ${operations.filter((o) => o.kind === 'follow-on').length} |`,
    `| of them sent two at once on one task (contention) | ${operations.filter((o) => /turn \d+[ab]$/.test(o.text)).length} |`,
    `| retried (same Idempotency-Key, another replica) | ${operations.filter((o) => o.attempts.length > 1).length} |`,
    `| of them after the client dropped the connection | ${operations.filter((o) => o.attempts.some((a) => a.error === 'dropped by the client')).length} |`,
    '',
    `Attempts by answer: ${[...byStatus].map(([k, n]) => `${k}: ${n}`).join(', ')}.`,
    `Model: ${Object.entries(model)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}.`,
    '',
    `## Faults`,
    '',
    ...[...faultKinds].map(([k, n]) => `- ${k}: ${n}`),
    '',
    `## Latency of answered attempts`,
    '',
    `- outside faults: ${latency(attempts.filter((a) => !inFault(a)))}`,
    `- during a fault (or within a lease after it): ${latency(attempts.filter(inFault))}`,
    '',
    `Turns that failed visibly (no 200 after every retry): ${failed} of ${operations.length} (${((100 * failed) / Math.max(1, operations.length)).toFixed(2)} %).`,
    '',
    `## Violations: ${violations.length}`,
    '',
    ...(violations.length
      ? [
          violationsByRule(violations),
          '',
          violations.length > SHOWN_VIOLATIONS ? `The first ${SHOWN_VIOLATIONS}, with the operations that show them:` : 'With the operations that show them:',
          '',
          formatViolations(violations.slice(0, SHOWN_VIOLATIONS), operations),
        ]
      : ['None.']),
    '',
  ].join('\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(2);
});
