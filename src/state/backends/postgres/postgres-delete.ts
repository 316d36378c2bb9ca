import { TaskRecord } from '../../state.entities';
import { PostgresContext } from './postgres-context';

/**
 * One step of deleting a task marked `deletingAt` (StateStore.deleteTaskBatch), given its header
 * as the step read it (`task`: the facade reads it through getTaskForDeletion, where
 * test/backends/deletion-race.e2e-spec.ts holds a step between that read and this call): one call
 * of `delete_batch` (migrations/0001-init.sql.ts), which removes what it may only while the header
 * is still that one (its version and writeId). True when no task marked for deletion is left
 * under the id.
 */
export async function deleteTaskStep(
  ctx: PostgresContext,
  tenantId: string,
  taskId: string,
  task: TaskRecord | undefined,
  batchSize: number,
): Promise<boolean> {
  if (!task) return true;
  if (task.deletingAt === undefined) return true;
  const { names } = ctx;
  const [{ step }] = await ctx.query<{ step: 'gone' | 'changed' | 'more' | 'done' }>(
    names.row('tasks', tenantId, taskId),
    `SELECT ${names.fn('delete_batch')}($1, $2, $3, $4, $5) AS step`,
    [tenantId, taskId, task.version, task.writeId ?? null, Math.max(1, Math.floor(batchSize))],
  );
  // 'changed': the marked header is gone and the id holds another task since.
  return step !== 'more';
}
