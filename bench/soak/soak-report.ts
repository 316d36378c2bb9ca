import { percentiles } from '../load';
import { BREAK, CLIENTS, CONVERSATIONS, FAULT_GAP_MS, LEASE_MS, REPLICAS, SECONDS, SEED, STORE } from './soak-config';
import { Attempt, checkHistory, formatViolations, Operation, timesToFree } from './soak-checker';
import { agentOf } from './soak-client';
import { Fault, KILL } from './soak-faults';

/** Violations listed one by one in the report (all are counted by rule). */
const SHOWN_VIOLATIONS = 50;

function violationsByRule(violations: ReturnType<typeof checkHistory>): string {
  const counts = new Map<string, number>();
  for (const v of violations) counts.set(v.rule, (counts.get(v.rule) ?? 0) + 1);
  return ['| rule | violations |', '|---|---|', ...[...counts].map(([rule, n]) => `| ${rule} | ${n} |`)].join('\n');
}

const DECISION_NAMES = {
  approve: 'approved',
  reject: 'rejected',
  expire: 'let expire, then approved (must be 409 APPROVAL_EXPIRED)',
  stale: 'a decided pause decided again, new key (stale: must be 409)',
};

function decisionsOf(operations: Operation[], kind: keyof typeof DECISION_NAMES): number {
  return operations.reduce((n, o) => n + (o.decisions ?? []).filter((d) => d.kind === kind).length, 0);
}

/** Attempts counted by their answer: `200 Completed: 12, no answer: 3, …`. */
function answers(attempts: Attempt[]): string {
  const byStatus = new Map<string, number>();
  for (const a of attempts) {
    const k = a.status ? `${a.status} ${a.outcome ?? ''}`.trim() : 'no answer';
    byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
  }
  return [...byStatus].map(([k, n]) => `${k}: ${n}`).join(', ');
}

/** The times for killed replicas' tasks to be free again (timesToFree), summed up. */
function freeAgain(operations: Operation[], faults: Fault[]): string {
  const times = timesToFree(
    operations,
    faults.filter((f) => f.kind === KILL && f.replica !== undefined).map((f) => ({ at: f.at, replica: f.replica! })),
  );
  if (!times.length) return 'no task was held by a killed replica';
  const p = percentiles(times);
  return `${times.length} tasks, p50 ${p.p50?.toFixed(0)} ms, max ${Math.max(...times).toFixed(0)} ms (lease ${LEASE_MS} ms + the store's skew allowance + a 500 ms sweep, + the clients' retry pacing)`;
}

/** soak-report.md: operations by kind, faults by kind, latency outside and during faults, violations. */
export function reportOf(
  operations: Operation[],
  faults: Fault[],
  model: Record<string, number>,
  violations: ReturnType<typeof checkHistory>,
  startedAt: number,
  toolRuns: { issued: number; calls: number; ran: number },
): string {
  const attempts = operations.flatMap((o) => o.attempts);
  const streamed = operations.filter((o) => o.events);
  // Connections after the first: reattaches (and a POST sent again when its first copy got no answer).
  const reattaches = streamed.reduce((n, o) => n + Math.max(0, o.attempts.length - 1), 0);
  const inFault = (a: Attempt) => faults.some((f) => a.startedAt < f.until + LEASE_MS && a.endedAt > f.at);
  const latency = (xs: Attempt[]) => {
    const p = percentiles(xs.filter((a) => a.status === 200).map((a) => a.endedAt - a.startedAt));
    return `p50 ${p.p50?.toFixed(0)} ms, p99 ${p.p99?.toFixed(0)} ms (${xs.length} attempts)`;
  };
  // Turns only (a cancel, fork or delete is no turn); answered: any 2xx (202 Queued included), or a streamed one's final event, not an error.
  const turns = operations.filter((o) => ['first', 'follow-on', 'edit'].includes(o.kind));
  const answered = turns.filter((o) =>
    o.attempts.some((a) => a.status >= 200 && a.status < 300 && (!o.events || ['Completed', 'Paused', 'Canceled'].includes(a.outcome ?? ''))),
  );
  const failed = turns.length - answered.length;
  const faultKinds = new Map<string, number>();
  for (const f of faults) faultKinds.set(f.kind, (faultKinds.get(f.kind) ?? 0) + 1);
  return [
    `# Soak report`,
    '',
    `${BREAK ? `**A test build with a guarantee removed (SOAK_BREAK=${BREAK}).** ` : ''}Seed ${SEED}, ${REPLICAS} replicas on ${STORE}, ${CONVERSATIONS} conversations, ${CLIENTS} clients, ${((Date.now() - startedAt) / 1000).toFixed(0)} s (${new Date().toISOString()}).`,
    `Replay: \`SOAK_STORE=${STORE} SOAK_SEED=${SEED} SOAK_REPLICAS=${REPLICAS} SOAK_CONVERSATIONS=${CONVERSATIONS} SOAK_CLIENTS=${CLIENTS} SOAK_SECONDS=${SECONDS}${FAULT_GAP_MS !== 5_000 ? ` SOAK_FAULT_GAP_MS=${FAULT_GAP_MS}` : ''}${process.env.SOAK_FAULTS ? ` SOAK_FAULTS=${process.env.SOAK_FAULTS}` : ''} npm run soak\`.`,
    '',
    `## Operations`,
    '',
    `| kind | operations |`,
    `|---|---|`,
    `| first turn | ${operations.filter((o) => o.kind === 'first').length} |`,
    `| follow-on | ${operations.filter((o) => o.kind === 'follow-on').length} |`,
    `| of them sent two at once on one task (contention) | ${operations.filter((o) => /turn \d+[ab]$/.test(o.text)).length} |`,
    `| retried (same Idempotency-Key, another replica) | ${operations.filter((o) => o.attempts.length > 1).length} |`,
    `| of them after the client dropped the connection | ${operations.filter((o) => o.attempts.some((a) => a.error === 'dropped by the client')).length} |`,
    `| asked for a tool that runs at once | ${operations.filter((o) => o.text.includes('[tool:count]')).length} |`,
    `| asked for a tool that waits for approval | ${operations.filter((o) => o.text.includes('[tool:guarded]')).length} |`,
    `| of them on the agent that queues (on_busy: enqueue) | ${operations.filter((o) => o.user.startsWith('user-') && agentOf(o.user) === 'SoakQueue/1' && ['first', 'follow-on'].includes(o.kind)).length} |`,
    `| of them answered 202 Queued (then run after the turn ahead) | ${operations.filter((o) => o.attempts.some((a) => a.status === 202 && a.outcome === 'Queued')).length} |`,
    `| streamed (POST /sse) | ${streamed.length} |`,
    `| of them reattached (GET …/tasks/{id}/stream with Last-Event-ID, on another replica) | ${streamed.filter((o) => o.events!.some((e) => e.connection > 0)).length} (${reattaches} reattaches, ${streamed.reduce((n, o) => n + o.events!.length, 0)} events seen) |`,
    `| of them that saw their final event | ${streamed.filter((o) => o.events!.some((e) => e.event === 'final-response' || e.event === 'error')).length} |`,
    `| edit (a completed turn replaced and rerun) | ${operations.filter((o) => o.kind === 'edit').length} |`,
    `| cancel (of a slow turn, while it runs) | ${operations.filter((o) => o.kind === 'cancel').length} |`,
    `| fork (up to a completed turn) | ${operations.filter((o) => o.kind === 'fork').length} |`,
    `| delete of the task (its conversation goes on with a new task) | ${operations.filter((o) => o.kind === 'delete').length} |`,
    ...(['approve', 'reject', 'expire', 'stale'] as const).map((kind) => `| decision: ${DECISION_NAMES[kind]} | ${decisionsOf(operations, kind)} |`),
    '',
    `Attempts by answer: ${answers(attempts)}.`,
    `Decisions by answer: ${answers(operations.flatMap((o) => (o.decisions ?? []).flatMap((d) => d.attempts)))}.`,
    `Tool calls: ${toolRuns.issued} asked for by the model, ${toolRuns.ran} side effects counted (over ${toolRuns.calls} call ids).`,
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
    `Time for a killed replica's tasks to be free again (from the kill -9 until a later turn on a task it held, a turn in flight on it then, was admitted: the start of the first such attempt answered 2xx): ${freeAgain(operations, faults)}.`,
    '',
    `Turns that failed visibly (no 2xx after every retry; a streamed one: no final event but an error): ${failed} of ${turns.length} (${((100 * failed) / Math.max(1, turns.length)).toFixed(2)} %).`,
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
