import { DeleteCommand, QueryCommand, TransactItem, TransactWriteCommand } from './dynamodb-wire';
import { TaskRecord } from '../../state.entities';
import { DynamoDbContext } from './dynamodb-context';
import { deleteKeys, incarnationPartKeys, partKeysOf } from './dynamodb-parts';
import { getItem, parseItem, sessionHasEntries } from './dynamodb-query';
import { streamItemKeys } from './dynamodb-stream';
import { archivePk, HEADER_SK, leaseShard, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, taskPk } from './dynamodb-keys';

/**
 * Requests (or stream items) removed per deletion step at most: two deletes each, with the check
 * of the marked header, in one transaction of at most 100 items.
 */
const MAX_DELETE_BATCH = 49;

/**
 * One step of deleting a task marked `deletingAt` (StateStore.deleteTaskBatch). A step removes up
 * to `batchSize` (at most 49) stream items, else up to that many requests with their index
 * entries, in one transaction, then the parts those requests named; once no request is left, a
 * step removes the parts of the task's incarnation no request names, if any; the step that finds
 * none removes the header with its session entry (and its archive entry, when it has one), then the owner's entry for the session if that
 * left it empty.
 *
 * Every transaction of a step also checks that the header is still the marked one it read
 * (version and incarnation): between that read and a write, another process may have finished
 * the deletion and a follow-on created the id anew, whose items must not go. While the marked
 * header is there no newer incarnation can hold an item, so what the transaction removes is the
 * old task's (or older garbage). A cancelled transaction writes nothing, and the next step reads again.
 */
export async function deleteTaskStep(ctx: DynamoDbContext, tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
  const pk = taskPk(tenantId, taskId);
  const header = await getItem(ctx, { pk, sk: HEADER_SK });
  // A commit built on a remembered header of this task would fail its condition anyway.
  ctx.headers.forget(pk);
  if (!header) return true;
  if (parseItem<TaskRecord>(header).deletingAt === undefined) return true;
  const marked = { '#v': 'version', '#i': 'inc' };
  const pinned = {
    ConditionExpression: '#v = :v AND #i = :i',
    ExpressionAttributeNames: marked,
    ExpressionAttributeValues: { ':v': header.version, ':i': header.inc },
  };
  const stillMarked = { ConditionCheck: { TableName: ctx.table, Key: { pk, sk: HEADER_SK }, ...pinned } };
  const del = (key: { pk: string; sk: string }) => ({ Delete: { TableName: ctx.table, Key: key } });
  const limit = Math.max(1, Math.min(MAX_DELETE_BATCH, Math.floor(batchSize)));

  const events = await streamItemKeys(ctx.wire, ctx.table, pk, limit);
  if (events.length) {
    await deleteTransaction(ctx, [stillMarked, ...events.map(del)]);
    return false;
  }
  const found = await ctx.wire.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :req)',
      ExpressionAttributeValues: { ':pk': pk, ':req': 'REQ#' },
      ProjectionExpression: 'pk, sk, requestId, gen, parts',
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  const requests = found.Items ?? [];
  if (requests.length) {
    const items = requests.flatMap((i) => [
      del({ pk, sk: String(i.sk) }),
      ...(typeof i.requestId === 'string' ? [del({ pk: requestIndexPk(tenantId, i.requestId), sk: REQUEST_INDEX_SK })] : []),
    ]);
    // The parts they named once they are surely the old task's: a step cut short in between
    // leaves parts no request names, of the marked incarnation, which a later step sweeps up.
    if (await deleteTransaction(ctx, [stillMarked, ...items])) await deleteKeys(ctx.wire, ctx.table, requests.flatMap(partKeysOf));
    return false;
  }
  // Parts no request names (of writers that crashed or lost, dynamodb-parts.ts): rare, all at once.
  const leftovers = await incarnationPartKeys(ctx.wire, ctx.table, pk, header.inc);
  if (leftovers.length) {
    await deleteKeys(ctx.wire, ctx.table, leftovers);
    return false;
  }
  const session = { pk: String(header.sessionPk), sk: String(header.sessionSk) };
  // Its archive entry, if a commit listed it (StateStore.listUnarchived), goes with the header.
  const archived = typeof header.archiveSk === 'string' ? [del({ pk: archivePk(leaseShard(tenantId, taskId)), sk: header.archiveSk })] : [];
  const removed = await deleteTransaction(ctx, [{ Delete: { TableName: ctx.table, Key: { pk, sk: HEADER_SK }, ...pinned } }, del(session), ...archived]);
  // Another process finishing the same deletion got there first: the next step sees what is left.
  if (!removed) return false;
  if (!(await sessionHasEntries(ctx, session.pk))) {
    const task = parseItem<TaskRecord>(header);
    await ctx.wire.send(new DeleteCommand({ TableName: ctx.table, Key: { pk: ownerSessionsPk(tenantId, task.ownerId), sk: task.sessionId } }));
  }
  return true;
}

/**
 * One deletion transaction; false when it was cancelled (another process finishing the same
 * deletion deleted or held the same items: harmless, the caller's next step re-reads).
 */
async function deleteTransaction(ctx: DynamoDbContext, items: TransactItem[]): Promise<boolean> {
  try {
    await ctx.wire.send(new TransactWriteCommand({ TransactItems: items }));
    return true;
  } catch (err) {
    if ((err as { name?: string }).name === 'TransactionCanceledException') return false;
    throw err;
  }
}
