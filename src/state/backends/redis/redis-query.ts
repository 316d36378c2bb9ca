import { Page } from '../../state-store';
import { RequestRecord, TaskRecord } from '../../state.entities';
import { isExpired } from '../../state-store.util';
import { pageLiveEntries } from '../live-page.util';
import { parseRecord } from '../parse-record.util';
import { READ_RECORDS_TIMEOUT_FACTOR, RedisContext } from './redis-context';
import { resultsOf } from './redis-errors';

// The reads and pages of the Redis store, and the header parse the stream log and the deletion use.
// The key layout is in redis-keys.ts.

/** The task header; undefined when missing or expired, or marked for deletion (unless `deleting`). */
export async function readTask(ctx: RedisContext, tenantId: string, taskId: string, deleting = false): Promise<TaskRecord | undefined> {
  const key = ctx.keys(tenantId).task(taskId);
  return ctx.run(key, async () => liveTask(key, await ctx.redis.hget(key, 'data'), ctx.now(), deleting));
}

export async function readOwnerSessions(ctx: RedisContext, tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
  const k = ctx.keys(tenantId);
  const key = k.ownerSessions(ownerId);
  return ctx.run(key, () =>
    pageLiveEntries(page, async (after, count) => {
      const ids = await ctx.redis.zrangebylex(key, after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, count);
      const pipeline = ctx.redis.pipeline();
      for (const id of ids) pipeline.exists(k.session(ownerId, id));
      const exists = ids.length ? resultsOf(await pipeline.exec(), key) : [];
      // A session whose index expired with its tasks is dead.
      return { entries: ids.map((id, i) => ({ position: id, item: exists[i] ? id : undefined })), more: ids.length === count };
    }),
  );
}

export async function readRequests(ctx: RedisContext, tenantId: string, taskId: string): Promise<RequestRecord[]> {
  const k = ctx.keys(tenantId);
  const key = k.task(taskId);
  return ctx.run(
    key,
    async () => {
      // One MULTI: the header and its requests are read as one snapshot.
      const [data, fields] = resultsOf(await ctx.redis.multi().hget(key, 'data').hgetall(k.requests(taskId)).exec(), key);
      if (!liveTask(key, data as string | null, ctx.now())) return [];
      return Object.entries(fields as Record<string, string>)
        .map(([seq, json]) => parseRecord<RequestRecord>(`${k.requests(taskId)}#${seq}`, json))
        .sort((a, b) => a.seq - b.seq);
    },
    ctx.timeoutMs * READ_RECORDS_TIMEOUT_FACTOR,
  );
}

export async function readRequest(ctx: RedisContext, tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
  const k = ctx.keys(tenantId);
  const indexKey = k.requestIndex(requestId);
  return ctx.run(indexKey, async () => {
    const ref = await ctx.redis.get(indexKey);
    if (ref === null) return undefined;
    const { taskId, seq } = parseRecord<{ taskId: string; seq: number }>(indexKey, ref);
    const key = k.task(taskId);
    const read = () => ctx.redis.multi().hget(key, 'data').hget(k.requests(taskId), String(seq)).exec();
    const [data, json] = resultsOf(await ctx.sent(read, ctx.timeoutMs * READ_RECORDS_TIMEOUT_FACTOR), key);
    if (!liveTask(key, data as string | null, ctx.now()) || json === null) return undefined;
    const record = parseRecord<RequestRecord>(`${k.requests(taskId)}#${seq}`, json as string);
    // The seq may since have been replaced by another request (a re-created task).
    return record.requestId === requestId ? record : undefined;
  });
}

export async function readSessionTasks(
  ctx: RedisContext,
  tenantId: string,
  ownerId: string,
  sessionId: string,
  page: { limit: number; cursor?: string; includeDeleting?: boolean },
): Promise<Page<TaskRecord>> {
  const k = ctx.keys(tenantId);
  const sessionKey = k.session(ownerId, sessionId);
  return ctx.run(sessionKey, () =>
    pageLiveEntries(page, async (after, count) => {
      const min = after && /^\d+$/.test(after) ? `(${after}` : '-inf';
      const flat = await ctx.redis.zrangebyscore(sessionKey, min, '+inf', 'WITHSCORES', 'LIMIT', 0, count);
      const ids = flat.filter((_, i) => i % 2 === 0);
      const pipeline = ctx.redis.pipeline();
      for (const id of ids) pipeline.hget(k.task(id), 'data');
      const headers = ids.length ? resultsOf(await pipeline.exec(), sessionKey) : [];
      const entries = ids.map((id, i) => {
        const task = liveTask(k.task(id), headers[i] as string | null, ctx.now(), page.includeDeleting);
        // A re-created task id may now belong to another session: it is not this one's.
        const mine = task && task.ownerId === ownerId && task.sessionId === sessionId ? task : undefined;
        return { position: flat[i * 2 + 1], item: mine };
      });
      return { entries, more: ids.length === count };
    }),
  );
}

/** Parses a stored header; undefined when absent or expired, or marked for deletion (unless `deleting`). */
export function liveTask(key: string, data: string | null, now: number, deleting = false): TaskRecord | undefined {
  if (data === null) return undefined;
  const task = parseRecord<TaskRecord>(key, data);
  return isExpired(task, now) || (!deleting && task.deletingAt !== undefined) ? undefined : task;
}
