import { StreamEvent } from '../../state-store';
import { RedisContext } from './redis-context';
import { STREAM_APPEND_LUA } from './redis-stream.lua';
import { RedisScript } from './redis-wire';
import { resultsOf } from './redis-errors';
import { enc } from './redis-keys';
import { parseRecord } from '../parse-record.util';
import { liveTask } from './redis-query';

// The stream log on Redis (StateStore.appendStreamEvents / readStreamEvents): a list beside the task
// (redis-keys.ts), appended to by redis-stream.lua.ts.

export async function appendStreamEntries(
  ctx: RedisContext,
  tenantId: string,
  taskId: string,
  seq: number,
  events: StreamEvent[],
  requestId?: string,
): Promise<void> {
  if (!events.length) return;
  const k = ctx.keys(tenantId);
  // The request-ids set holds the members as the commit script adds them (encoded).
  const args: (string | number)[] = [seq, requestId === undefined ? '' : enc(requestId)];
  for (const e of events) args.push(e.n, JSON.stringify({ s: seq, n: e.n, e: e.event, d: e.data }));
  await ctx.run(k.task(taskId), () => ctx.redis.runScript(STREAM_APPEND, 3, k.task(taskId), k.stream(taskId), k.requestIds(taskId), ...args));
}

export async function readStreamEntries(ctx: RedisContext, tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
  const k = ctx.keys(tenantId);
  const key = k.task(taskId);
  return ctx.run(key, async () => {
    const [data, entries] = resultsOf(await ctx.redis.multi().hget(key, 'data').lrange(k.stream(taskId), 0, -1).exec(), key);
    if (!liveTask(key, data as string | null, ctx.now())) return [];
    return (entries as string[])
      .map((json) => parseRecord<{ s: number; n: number; e: string; d: Record<string, unknown> }>(k.stream(taskId), json))
      .filter((x) => x.s === seq && x.n > after)
      .map((x) => ({ n: x.n, event: x.e, data: x.d }));
  });
}

const STREAM_APPEND = new RedisScript(STREAM_APPEND_LUA);
