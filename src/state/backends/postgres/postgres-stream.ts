import { StreamEvent } from '../../state-store';
import { PostgresContext } from './postgres-context';
import { parseRecord } from '../parse-record.util';

// The stream log on PostgreSQL (StateStore.appendStreamEvents / readStreamEvents): rows of
// stream_events beside the task (postgres-keys.ts), appended to by `append_stream`
// (migrations/0001-init.sql.ts), which applies the log's rules under the header's row lock.

export async function appendStreamEntries(
  ctx: PostgresContext,
  tenantId: string,
  taskId: string,
  seq: number,
  events: StreamEvent[],
  requestId?: string,
): Promise<void> {
  if (!events.length) return;
  const { names } = ctx;
  await ctx.query(names.row('stream_events', tenantId, taskId, seq), `SELECT ${names.fn('append_stream')}($1, $2, $3, $4, $5, $6, $7)`, [
    tenantId,
    taskId,
    seq,
    requestId ?? null,
    events.map((e) => e.n),
    events.map((e) => e.event),
    events.map((e) => JSON.stringify(e.data)),
  ]);
}

export async function readStreamEntries(ctx: PostgresContext, tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
  const { names } = ctx;
  const rows = await ctx.query<{ n: string; event: string; data: string }>(
    names.row('stream_events', tenantId, taskId, seq),
    `SELECT e.n, e.event, e.data FROM ${names.tasks} h JOIN ${names.streamEvents} e ON e.tenant_id = h.tenant_id AND e.task_id = h.task_id
      WHERE h.tenant_id = $1 AND h.task_id = $2 AND NOT h.deleting AND (h.expires_at IS NULL OR h.expires_at > ${names.fn('now_ms')}())
        AND e.seq = $3 AND e.n > $4 ORDER BY e.n`,
    [tenantId, taskId, seq, after],
  );
  return rows.map((r) => ({
    n: Number(r.n),
    event: r.event,
    data: parseRecord<Record<string, unknown>>(names.row('stream_events', tenantId, taskId, seq, Number(r.n)), r.data),
  }));
}
