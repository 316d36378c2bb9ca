import { randomUUID } from 'node:crypto';
import { loadEnvConfig } from '../src/config/env.config';
import { DYNAMODB_LOCAL } from '../test/support/services';
import { createStateStore } from '../src/state/state-store.factory';
import { StateStore } from '../src/state/state-store';
import { RequestRecord, TaskRecord } from '../src/state/state.entities';
import { HistoryStore, Msg, openHistoryStore } from './baseline-stores';
import { median } from './rounds';
import { startBenchStores } from './stores';

/**
 * The stores' client work alone (`BENCH_ENTRY=store-layer npm run bench`; BENCH_STORES limits it to
 * some of redis, dynamodb, postgres): the CPU per turn of this process calling our state store as a
 * turn does (two commits: the request admitted, Running with its lease; then finished, its answer
 * stored and the lease gone; each a compare-and-set on the version and writeId the last one
 * returned) against the same-store baseline's calls (bench/baseline-stores.ts: its history read and
 * written), on the same Redis / DynamoDB Local / PostgreSQL, 16 conversations at once, alternating
 * rounds. Our store is made by the server's own factory from the env the bench gives a server.
 * Information, no target: the whole turn's same-store ratio (bench/run.ts) is this plus the rest of
 * the turn (docs/performance.md). BENCH_STORE_LAYER_ROUNDS (default 5) of BENCH_STORE_LAYER_TURNS
 * turns per conversation (default 50), after a warm-up of twice that.
 */
const ROUNDS = Number(process.env.BENCH_STORE_LAYER_ROUNDS ?? 5);
const TURNS = Number(process.env.BENCH_STORE_LAYER_TURNS ?? 50);
const CONVERSATIONS = 16;
const TENANT = 'bench-tenant';

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const message = (role: string, content: string) => ({
  id: randomUUID(),
  role,
  items: [{ content_type: 'text', content }],
  created_at: new Date().toISOString(),
});

/** One conversation of `turns` turns on our store, each its two commits. */
async function ours(store: StateStore, turns: number): Promise<void> {
  const taskId = randomUUID();
  const now = new Date().toISOString();
  let task = {
    taskId,
    sessionId: randomUUID(),
    tenantId: TENANT,
    ownerId: 'bench-owner',
    agent: 'Bench:1',
    status: 'Completed',
    version: 0,
    requestCount: 0,
    lastEventSeq: 0,
    metadata: {},
    createdAt: now,
    updatedAt: now,
    writeId: randomUUID(),
  } as unknown as TaskRecord;
  for (let seq = 0; seq < turns; seq++) {
    const request = {
      requestId: randomUUID(),
      taskId,
      sessionId: task.sessionId,
      tenantId: TENANT,
      ownerId: task.ownerId,
      seq,
      status: 'Running',
      messages: [message('user', 'hello')],
      toolCalls: [],
      tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
      createdAt: now,
      updatedAt: now,
    } as unknown as RequestRecord;
    const admitted = {
      ...task,
      status: 'Running',
      requestCount: seq + 1,
      lease: { requestId: request.requestId, expiresAt: Date.now() + 60_000 },
      writeId: randomUUID(),
    } as TaskRecord;
    const a = await store.commit(TENANT, {
      task: admitted,
      expectedVersion: task.version,
      expectedWriteId: task.version > 0 ? task.writeId : undefined,
      requests: [request],
      requestJson: [JSON.stringify(request)],
    });
    const done = {
      ...request,
      status: 'Completed',
      messages: [...request.messages, message('assistant', 'Hello! How can I help?')],
      tokenUsage: { completion_tokens: 5, prompt_tokens: 10, total_tokens: 15 },
    } as unknown as RequestRecord;
    const { lease: _lease, ...rest } = admitted;
    const finished = { ...rest, status: 'Completed', version: a.version, writeId: randomUUID() } as TaskRecord;
    const b = await store.commit(TENANT, {
      task: finished,
      expectedVersion: a.version,
      expectedWriteId: admitted.writeId,
      requests: [done],
      requestJson: [JSON.stringify(done)],
    });
    task = b;
  }
}

/** One conversation of `turns` turns on the baseline's store, each a read and a write of its history. */
async function baseline(store: HistoryStore, turns: number): Promise<void> {
  const id = randomUUID();
  for (let i = 0; i < turns; i++) {
    const held = store.turn ? await store.turn() : undefined;
    const s = held ?? store;
    const history: Msg[] = (await s.get(id)) ?? [{ role: 'system', content: 'You are terse.' }];
    history.push({ role: 'user', content: 'hello' }, { role: 'assistant', content: 'Hello! How can I help?' });
    await s.set(id, history);
    held?.end();
  }
}

/** CPU ms per turn of `conversations` conversations of `turns` turns at once. */
async function perTurn(run: (turns: number) => Promise<void>, turns: number): Promise<number> {
  const start = cpuMs();
  await Promise.all(Array.from({ length: CONVERSATIONS }, () => run(turns)));
  return (cpuMs() - start) / (CONVERSATIONS * turns);
}

async function main(): Promise<void> {
  process.env.BENCH_STORES ??= 'redis,dynamodb,postgres';
  const stores = await startBenchStores();
  const lines = [
    "# The stores' client work alone (BENCH_ENTRY=store-layer)",
    '',
    `CPU ms per turn of this process: ours = two commits of our state store (the server's factory), baseline = the same-store baseline's history read and write; ${CONVERSATIONS} conversations at once, ${ROUNDS} alternating rounds of ${TURNS} turns each.`,
    '',
    '| store | ours per round | baseline per round | ours (median) | baseline (median) | ours ÷ baseline |',
    '|---|---|---|---|---|---|',
  ];
  try {
    for (const entry of stores.envs) {
      if (!entry.baselineEnv) continue;
      Object.assign(process.env, entry.baselineEnv);
      const config = loadEnvConfig({ ...entry.env, TA_AUTH_MODE: 'dev' });
      const store = await createStateStore(config.state, { dynamoDbCredentials: DYNAMODB_LOCAL.credentials, redisKeyPrefix: `bench-layer-${process.pid}:` });
      const history = (await openHistoryStore(entry.name))!;
      await perTurn((t) => ours(store, t), TURNS * 2);
      await perTurn((t) => baseline(history, t), TURNS * 2);
      const rounds: { ours: number; baseline: number }[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // Who goes first alternates, so a slow minute of the machine falls on both alike.
        const first = r % 2 === 0;
        const b0 = first ? await perTurn((t) => baseline(history, t), TURNS) : undefined;
        const o = await perTurn((t) => ours(store, t), TURNS);
        const b = b0 ?? (await perTurn((t) => baseline(history, t), TURNS));
        rounds.push({ ours: o, baseline: b });
      }
      await store.close();
      const o = median(rounds.map((r) => r.ours));
      const b = median(rounds.map((r) => r.baseline));
      const fmt = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(', ');
      lines.push(
        `| ${entry.name} | ${fmt(rounds.map((r) => r.ours))} | ${fmt(rounds.map((r) => r.baseline))} | **${o.toFixed(3)}** | ${b.toFixed(3)} | **${(o / b).toFixed(2)}×** |`,
      );
    }
  } finally {
    await stores.stop();
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(0);
}

void main();
