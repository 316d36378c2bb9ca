import { GetCommand, QueryCommand } from './dynamodb-wire';
import { Page } from '../../state-store';
import { RequestRecord, TaskRecord } from '../../state.entities';
import { StateCorruptError } from '../../state.errors';
import { parseRecord } from '../parse-record.util';
import { isExpired } from '../../state-store.util';
import { pageLiveEntries } from '../live-page.util';
import { DynamoDbContext } from './dynamodb-context';
import { snapshotOf } from './dynamodb-header-cache';
import { Item } from './dynamodb-items';
import { readRequestItem, withParts } from './dynamodb-parts';
import { HEADER_SK, itemName, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, REQUESTS_END, sessionPk, taskPk } from './dynamodb-keys';

// The reads and pages of the DynamoDB store, and the header read that the commit and the deletion
// build on: every header read is remembered for commits (dynamodb-header-cache.ts).

/**
 * One page (`count` entries after `after`) of an index partition: an owner's sessions or a
 * session's tasks; with `projection`, only those attributes of each.
 */
async function queryIndexPage(
  ctx: DynamoDbContext,
  pk: string,
  after: string | undefined,
  count: number,
  projection?: string,
): Promise<{ items: Record<string, unknown>[]; more: boolean }> {
  const result = await ctx.wire.send(
    new QueryCommand({
      TableName: ctx.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
      Limit: count,
      ExclusiveStartKey: after === undefined ? undefined : { pk, sk: after },
      ProjectionExpression: projection,
    }),
  );
  return { items: result.Items ?? [], more: result.LastEvaluatedKey !== undefined };
}

export async function readOwnerSessions(
  ctx: DynamoDbContext,
  tenantId: string,
  ownerId: string,
  page: { limit: number; cursor?: string },
): Promise<Page<string>> {
  const pk = ownerSessionsPk(tenantId, ownerId);
  return pageLiveEntries(page, async (after, count) => {
    const { items, more } = await queryIndexPage(ctx, pk, after, count);
    const entries = await Promise.all(
      items.map(async (entry) => {
        const sessionId = String(entry.sessionId);
        // A session whose entries all expired is dead.
        const live = await sessionHasEntries(ctx, sessionPk(tenantId, ownerId, sessionId));
        return { position: String(entry.sk), item: live ? sessionId : undefined };
      }),
    );
    return { entries, more };
  });
}

export async function sessionHasEntries(ctx: DynamoDbContext, pk: string): Promise<boolean> {
  return (await queryIndexPage(ctx, pk, undefined, 1, 'pk')).items.length > 0;
}

export async function readRequests(ctx: DynamoDbContext, tenantId: string, taskId: string): Promise<RequestRecord[]> {
  const pk = taskPk(tenantId, taskId);
  // The header sorts before every REQ# item (and after the EVT# stream items, not read here), and
  // request parts after them (RPART#, read by key when a request names them), so one Query reads
  // the task and its requests.
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await ctx.wire.send(
      new QueryCommand({
        TableName: ctx.table,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :header AND :end',
        ExpressionAttributeValues: { ':pk': pk, ':header': HEADER_SK, ':end': REQUESTS_END },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  const header = items.find((i) => i.sk === HEADER_SK);
  if (!header || !noteHeader(ctx, pk, header).task) return [];
  const mine = items.filter((i) => i.sk !== HEADER_SK && i.inc === header.inc);
  // A split request is put together from the parts it names (dynamodb-parts.ts); one whose parts
  // a concurrent rewrite replaced since this query read it is read again on its own.
  const whole = await Promise.all(
    mine.map(
      async (i) => (await withParts(ctx.wire, ctx.table, i)) ?? (await readRequestItem(ctx.wire, ctx.table, pk, Number(String(i.sk).slice('REQ#'.length)))),
    ),
  );
  return whole
    .filter((i): i is Item => i !== undefined && i.inc === header.inc)
    .map((i) => parseItem<RequestRecord>(i))
    .sort((a, b) => a.seq - b.seq);
}

export async function readRequest(ctx: DynamoDbContext, tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
  const ref = await getItem(ctx, { pk: requestIndexPk(tenantId, requestId), sk: REQUEST_INDEX_SK });
  if (!ref) return undefined;
  const taskId = String(ref.taskId);
  const [header, item] = await Promise.all([
    readHeader(ctx, tenantId, taskId),
    readRequestItem(ctx.wire, ctx.table, taskPk(tenantId, taskId), Number(ref.seq)),
  ]);
  // All three must belong to the task's current incarnation (see `inc` in dynamodb-keys.ts).
  if (!header?.task || !item || header.inc !== ref.inc || item.inc !== ref.inc) return undefined;
  const record = parseItem<RequestRecord>(item);
  return record.requestId === requestId ? record : undefined;
}

export async function readSessionTasks(
  ctx: DynamoDbContext,
  tenantId: string,
  ownerId: string,
  sessionId: string,
  page: { limit: number; cursor?: string; includeDeleting?: boolean },
): Promise<Page<TaskRecord>> {
  const pk = sessionPk(tenantId, ownerId, sessionId);
  return pageLiveEntries(page, async (after, count) => {
    const { items, more } = await queryIndexPage(ctx, pk, after, count);
    const entries = await Promise.all(
      items.map(async (entry) => {
        const header = await readHeader(ctx, tenantId, String(entry.taskId), page.includeDeleting);
        // An entry of an earlier incarnation of the task id is dead.
        const mine = header?.task && header.inc === entry.inc ? header.task : undefined;
        return { position: String(entry.sk), item: mine };
      }),
    );
    return { entries, more };
  });
}

/** The header: its task (undefined when not live), incarnation and snapshot, remembered for commits. */
export async function readHeader(ctx: DynamoDbContext, tenantId: string, taskId: string, includeDeleting = false) {
  const pk = taskPk(tenantId, taskId);
  const item = await getItem(ctx, { pk, sk: HEADER_SK });
  if (!item) {
    ctx.headers.forget(pk);
    return undefined;
  }
  return noteHeader(ctx, pk, item, includeDeleting);
}

/** A header item just read, parsed and remembered; a corrupt one is forgotten (commits then read it, and fail). */
function noteHeader(ctx: DynamoDbContext, pk: string, item: Item, includeDeleting = false) {
  let task: TaskRecord;
  try {
    task = parseItem<TaskRecord>(item);
  } catch (err) {
    ctx.headers.forget(pk);
    throw err;
  }
  const snapshot = snapshotOf(item, task);
  ctx.headers.remember(pk, snapshot, true);
  return { task: liveRecord(task, ctx.now(), includeDeleting), inc: item.inc, snapshot };
}

export async function getItem(ctx: DynamoDbContext, key: { pk: string; sk: string }): Promise<Item | undefined> {
  const result = await ctx.wire.send(new GetCommand({ TableName: ctx.table, Key: key, ConsistentRead: true }));
  return result.Item;
}

/** The header's task; undefined when expired, or marked for deletion (unless `deleting`). */
function liveRecord(task: TaskRecord, now: number, deleting = false): TaskRecord | undefined {
  return isExpired(task, now) || (!deleting && task.deletingAt !== undefined) ? undefined : task;
}

/** The record in `data`; anything else is corrupt, reported with the item's key and left as it is. */
export function parseItem<T>(item: Item): T {
  const name = itemName(item as { pk: string; sk: string });
  if (typeof item.data !== 'string') throw new StateCorruptError(name);
  return parseRecord<T>(name, item.data);
}
