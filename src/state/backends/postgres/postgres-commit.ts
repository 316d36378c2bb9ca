import { TaskWrite } from '../../state-store';
import { IdempotencyEntry, TaskRecord } from '../../state.entities';
import { IdempotencyKeyTakenError, VersionConflictError } from '../../state.errors';
import { parseRecord } from '../parse-record.util';
import { expiresAtMs } from '../ttl-horizon.util';
import { frozenOwn, wakeAt } from '../../state-store.util';
import { PostgresContext } from './postgres-context';

/**
 * The commit (StateStore.commit): one call of `commit_task` (migrations/0001-init.sql.ts; the
 * version with `p_archive` and `p_claim` of migrations/0003-idempotency-keys.sql.ts), which locks
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
  const requests = (write.requests ?? []).map((r) => ({ ...r, tenantId }));
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
  const column = (items: string[], type: string) => `ARRAY[${items.join(', ')}]::${type}[]`;
  const param = (value: unknown) => `$${values.push(value)}`;
  const seqs = requests.map((r) => param(r.seq));
  const ids = requests.map((r) => param(r.requestId));
  const records = requests.map((r, i) => param(write.requestJson?.[i] ?? JSON.stringify(r)));
  const sentAt = Date.now();
  const [reply] = await ctx.query<{ outcome: 'ok' | 'conflict' | 'taken'; version: string; now_ms: number; held: string | null }>(
    names.row('tasks', tenantId, taskId),
    `SELECT outcome, version, now_ms, held::text AS held FROM ${names.fn('commit_task')}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
      $14, ${column(seqs, 'integer')}, ${column(ids, 'text')}, ${column(records, 'text')})`,
    values,
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
