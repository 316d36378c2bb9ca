import { TaskWrite } from '../../state-store';
import { IdempotencyEntry, TaskRecord } from '../../state.entities';
import { IdempotencyKeyTakenError, VersionConflictError } from '../../state.errors';
import { parseRecord } from '../parse-record.util';
import { expiresAtMs } from '../ttl-horizon.util';
import { frozenOwn, wakeAt } from '../../state-store.util';
import { PostgresContext } from './postgres-context';
import { PostgresNames } from './postgres-keys';

/**
 * The commit (StateStore.commit): one call of `commit_task` (migrations/0001-init.sql.ts; the
 * version with `p_archive` and `p_claim` of migrations/0003-idempotency-keys.sql.ts, its body now
 * that of migrations/0004-commit-first-path.sql.ts), which locks
 * the header row, checks the version and writeId, claims the write's Idempotency-Key (when it has
 * one) and writes the header (with its archive index column, when the store keeps the index) and
 * the requests in one statement, so one round trip and one transaction. Each request is its own
 * parameter (the arrays are built in the statement), so a record of any size is sent as it is,
 * never escaped into an array literal. The answer carries the database's clock, which keeps the
 * store's estimate of it fresh; and, when a live entry holds the key (nothing was written), that
 * entry.
 */
export async function commitTask(ctx: PostgresContext, tenantId: string, write: TaskWrite): Promise<TaskRecord> {
  const { names } = ctx;
  const { taskId } = write.task;
  const stored: TaskRecord = { ...write.task, tenantId, version: write.expectedVersion + 1 };
  const json = JSON.stringify(stored);
  const requests = write.requests ?? [];
  const values: unknown[] = [
    tenantId,
    taskId,
    write.expectedVersion,
    write.expectedVersion > 0 && write.expectedWriteId !== undefined ? write.expectedWriteId : null,
    stored.writeId ?? null,
    stored.ownerId,
    stored.sessionId,
    expiresAtMs(stored.expiresAt) ?? null,
    wakeAt(stored) ?? null,
    stored.deletingAt !== undefined,
    stored.requestCount,
    json,
    ctx.archiveIndex,
    write.idempotency ? JSON.stringify(write.idempotency) : null,
  ];
  for (const r of requests) values.push(r.seq);
  for (const r of requests) values.push(r.requestId);
  requests.forEach((r, i) => values.push(write.requestJson?.[i] ?? JSON.stringify({ ...r, tenantId })));
  const statement = commitStatement(names, requests.length);
  const sentAt = Date.now();
  const [reply] = await ctx.query<{ outcome: 'ok' | 'conflict' | 'taken'; version: string; now_ms: number; held: string | null }>(
    names.row('tasks', tenantId, taskId),
    statement.text,
    values,
    { name: ctx.preparedStatements ? statement.name : undefined, pipelined: true },
  );
  ctx.clock.observe(reply.now_ms, sentAt, Date.now());
  if (reply.outcome === 'conflict') throw new VersionConflictError(taskId, write.expectedVersion, Number(reply.version));
  if (reply.outcome === 'taken') {
    throw new IdempotencyKeyTakenError(parseRecord<IdempotencyEntry>(names.row('idempotency_keys', tenantId, write.idempotency!.key), reply.held!));
  }
  // What was stored, deep-frozen (as the memory store returns it), not parsed back from its JSON:
  // parts the task was built from that are frozen already are shared, and the writer's cache keeps
  // the record as it is instead of copying it once more.
  return frozenOwn(stored);
}

/** Commits of this many requests at most have a named prepared statement (each connection prepares those it runs). */
const PREPARED_REQUESTS_MAX = 8;

/** The statements of commits of 0 … PREPARED_REQUESTS_MAX requests, made once per schema. */
const prepared = new WeakMap<PostgresNames, { name: string; text: string }[]>();

/**
 * The commit's statement for `n` requests: `commit_task` with the header's 14 parameters, then the
 * requests' seqs, ids and records, each its own parameter (the arrays are built in the statement).
 * Up to PREPARED_REQUESTS_MAX requests it is named, so a connection parses and plans it once (a
 * commit carries one request, or none, nearly always); beyond, it is sent unnamed.
 */
function commitStatement(names: PostgresNames, n: number): { name?: string; text: string } {
  let made = prepared.get(names);
  if (!made) prepared.set(names, (made = []));
  const known = made[n];
  if (known) return known;
  const column = (from: number, type: string) => `ARRAY[${Array.from({ length: n }, (_, i) => `$${from + i}`).join(', ')}]::${type}[]`;
  const text = `SELECT outcome, version, now_ms, held::text AS held FROM ${names.fn('commit_task')}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
      $14, ${column(15, 'integer')}, ${column(15 + n, 'text')}, ${column(15 + 2 * n, 'text')})`;
  if (n > PREPARED_REQUESTS_MAX) return { text };
  return (made[n] = { name: `teal_commit_task_${n}`, text });
}
