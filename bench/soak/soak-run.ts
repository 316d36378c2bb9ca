import { rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { BREAK, CLIENTS, CONVERSATIONS, LEASE_MS, pick, REPORT, REPLICAS, SECONDS } from './soak-config';
import { checkHistory, FinalRead, StoredTask } from './soak-checker';
import { agentOf, SoakClients } from './soak-client';
import { Fault, runFaults } from './soak-faults';
import { BROKEN_DIST, serverEntry, startFleet, writeAgents } from './soak-fleet';
import { startModel } from './soak-model';
import { reportOf } from './soak-report';
import { startStore } from './soak-store';
import { startToolCounter } from './soak-tools';

/**
 * `npm run soak` (docs/reliability.md): a fleet of replicas of the built server on one store
 * (soak-fleet.ts, soak-store.ts), a model that fails and stalls at random (soak-model.ts), clients
 * over many conversations (soak-client.ts), and faults at random (soak-faults.ts), all drawn from one
 * seed (soak-config.ts); then the independent checker (soak-checker.ts) over what the clients saw
 * and what the store holds, and a report (soak-report.ts). Exits 1 on any violation.
 */
async function main(): Promise<void> {
  const entry = serverEntry();
  const store = await startStore();
  const model = await startModel();
  const counter = await startToolCounter();
  const fleet = await startFleet(entry, writeAgents(), REPLICAS, store.env, model.url, counter.url);
  const { replicas } = fleet;

  const clients = new SoakClients(replicas);
  const faults: Fault[] = [];
  const startedAt = Date.now();
  const deadline = startedAt + SECONDS * 1000;

  const bases = Array.from({ length: CONVERSATIONS }, (_, i) => `c${i}`);
  // Each client owns the conversations c, c + CLIENTS, …: one step at a time on each.
  const running = Array.from({ length: CLIENTS }, (_, c) =>
    clients.run(
      bases.filter((_, i) => i % CLIENTS === c),
      deadline,
    ),
  );
  await Promise.all([...running, runFaults(fleet, store, deadline, faults)]);
  // Quiesce: every lease a killed replica held has lapsed and been swept.
  await sleep(LEASE_MS * 2 + 1_000);

  const readAt = Date.now();
  const reads: FinalRead[] = [];
  /** A task as its owner reads it (every request, superseded ones too), and the status another user gets. */
  const readTask = async (conversation: string, taskId: string, forkOf?: string) => {
    const r = pick(replicas.filter((x) => x.up));
    const url = `http://127.0.0.1:${r.port}/${agentOf(`user-${conversation}`)}/tasks/${taskId}`;
    const own = await fetch(`${url}?include=superseded`, { headers: { 'x-dev-user': `user-${conversation}` } });
    const stranger = await fetch(url, { headers: { 'x-dev-user': 'someone-else' } });
    await stranger.arrayBuffer();
    const task = own.status === 200 ? ((await own.json()) as StoredTask) : (await own.arrayBuffer(), null);
    reads.push({ conversation, taskId, task, strangerStatus: stranger.status, ...(forkOf ? { forkOf } : {}) });
  };
  for (const conversation of clients.conversations) {
    const taskId = clients.taskOf.get(conversation);
    if (taskId) await readTask(conversation, taskId);
  }
  for (const { op, taskId } of clients.forks) await readTask(op.conversation, taskId, op.id);
  const violations = checkHistory(clients.operations, reads, {
    readAt,
    runningLimitMs: LEASE_MS + 5_000,
    tools: { issued: model.issued, runs: counter.runs },
  });

  const toolRuns = { issued: model.issued.length, calls: counter.runs.size, ran: [...counter.runs.values()].reduce((a, b) => a + b, 0) };
  const report = reportOf(clients.operations, faults, model.counts, violations, startedAt, toolRuns);
  writeFileSync(REPORT, report);
  // SOAK_HISTORY: the whole history (operations, faults, final reads) as JSON, to look into a violation.
  if (process.env.SOAK_HISTORY) writeFileSync(process.env.SOAK_HISTORY, JSON.stringify({ operations: clients.operations, faults, reads }));
  process.stdout.write(report);

  fleet.stop();
  if (BREAK) rmSync(BROKEN_DIST, { recursive: true, force: true });
  model.server.close();
  counter.server.close();
  await store.stop();
  process.exitCode = violations.length ? 1 : 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(2);
});
