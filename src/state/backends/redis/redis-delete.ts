import { TaskRecord } from '../../state.entities';
import { RedisContext } from './redis-context';
import { DELETE_BATCH_LUA } from './redis-delete.lua';
import { RedisScript } from './redis-wire';
import { archiveIndexKey } from './redis-keys';

/**
 * One step of deleting a task marked `deletingAt` (StateStore.deleteTaskBatch), given its header
 * as the step read it (`task`: the facade reads it through getTaskForDeletion, where
 * test/backends/deletion-race.e2e-spec.ts holds a step between that read and its script): runs
 * redis-delete.lua.ts, which removes what it may only while the header is still that one. True
 * when no task marked for deletion is left under the id.
 */
export async function deleteTaskStep(ctx: RedisContext, tenantId: string, taskId: string, task: TaskRecord | undefined, batchSize: number): Promise<boolean> {
  if (!task) return true;
  if (task.deletingAt === undefined) return true;
  const k = ctx.keys(tenantId);
  const keys = [
    k.task(taskId),
    k.requests(taskId),
    k.requestIds(taskId),
    k.session(task.ownerId, task.sessionId),
    k.ownerSessions(task.ownerId),
    k.stream(taskId),
    archiveIndexKey(ctx.prefix),
  ];
  const args = [task.version, Math.max(1, Math.floor(batchSize)), k.requestIndexPrefix, taskId, task.sessionId, task.writeId ?? ''];
  const reply = await ctx.run(keys[0], () => ctx.redis.runScript(DELETE_BATCH, keys.length, ...keys, ...args) as Promise<'gone' | 'changed' | 'more' | 'done'>);
  // 'changed': the marked header is gone and the id holds another task since.
  return reply !== 'more';
}

const DELETE_BATCH = new RedisScript(DELETE_BATCH_LUA);
