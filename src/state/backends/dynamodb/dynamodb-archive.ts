import { BatchGetCommand, DeleteCommand, isConditionFailure, QueryCommand, TransactItem, WireInput, WireOutput } from './dynamodb-wire';
import { ArchiveEntry, Page } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { IndexEntry, pageLiveEntries } from '../live-page.util';
import { DynamoDbContext } from './dynamodb-context';
import { HeaderSnapshot } from './dynamodb-header-cache';
import { ARCHIVE_SHARDS, archivePk, archiveSk, archiveSkUpTo, HEADER_SK, leaseShard, taskPk } from './dynamodb-keys';

/**
 * The archive index (StateStore.listUnarchived; its items in dynamodb-keys.ts, written by each
 * commit of a store that keeps it: dynamodb-commit.ts), paged by sort key across its partitions as
 * the lease index is (dynamodb-leases.ts): every partition is asked for `count` entries at once and
 * the answers merged. An entry carries its task's expiry: one of an expired task is dead, and
 * deleted (conditioned on its incarnation). A task's deletion removes its entry with the header.
 */
export async function readUnarchived(ctx: DynamoDbContext, before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
  if (!ctx.archiveIndex) return { items: [] };
  return pageLiveEntries(page, (after, count) => readArchiveEntries(ctx, { before, now: ctx.now() }, after, count));
}

async function readArchiveEntries(
  ctx: DynamoDbContext,
  span: { before: number; now: number },
  after: string | undefined,
  count: number,
): Promise<{ entries: IndexEntry<ArchiveEntry>[]; more: boolean }> {
  const upTo = archiveSkUpTo(span.before);
  // Just above `after`: every key that extends it, or sorts after it, is above this.
  const from = after === undefined ? undefined : `${after}\u0000`;
  if (from !== undefined && from > upTo) return { entries: [], more: false };
  const pages = await Promise.all(
    Array.from({ length: ARCHIVE_SHARDS }, (_, shard) =>
      ctx.wire.send(
        new QueryCommand({
          TableName: ctx.table,
          KeyConditionExpression: from === undefined ? 'pk = :pk AND sk <= :to' : 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': archivePk(shard), ':to': upTo, ...(from === undefined ? {} : { ':from': from }) },
          ConsistentRead: true,
          Limit: count,
        }),
      ),
    ),
  );
  const found = pages.flatMap((p) => p.Items ?? []).sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1));
  const entries = await Promise.all(
    found.slice(0, count).map(async (item): Promise<IndexEntry<ArchiveEntry>> => {
      const position = String(item.sk);
      if (item.taskExp !== undefined && Number(item.taskExp) <= span.now) {
        await dropEntry(ctx, item);
        return { position, item: undefined };
      }
      const entry = { tenantId: String(item.tenantId), taskId: String(item.taskId), version: Number(item.version), changedAt: Number(item.changedAt) };
      ctx.listedArchiveKeys.remember(taskPk(entry.tenantId, entry.taskId), position);
      return { position, item: entry };
    }),
  );
  return { entries, more: found.length > count || pages.some((p) => p.LastEvaluatedKey !== undefined) };
}

async function dropEntry(ctx: DynamoDbContext, item: Record<string, unknown>): Promise<void> {
  await conditionalDelete(
    ctx,
    { pk: item.pk, sk: item.sk },
    { ConditionExpression: '#i = :i', ExpressionAttributeNames: { '#i': 'inc' }, ExpressionAttributeValues: { ':i': item.inc } },
  );
}

/**
 * markArchived: per entry, a delete of the task's archive entry conditioned on its version being
 * at or below the one given (an entry a later commit put under the same key stays), all sent at
 * once. The entry's key is the one this store last listed for the task, or the one its remembered
 * header names (dynamodb-header-cache.ts: a commit of this store wrote it), so the batch is one
 * round trip. Only for a task it knows neither of, or whose known keys deleted nothing (a later
 * commit replaced the entry), does it read the headers (one BatchGetItem) and try the key they name.
 */
export async function markArchivedEntries(ctx: DynamoDbContext, entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
  if (!ctx.archiveIndex || !entries.length) return;
  const tried = new Map<string, Set<string>>();
  const attempt = async (batch: { tenantId: string; taskId: string; version: number }[], keysOf: (pk: string) => (string | undefined)[]) => {
    const done = await Promise.all(
      batch.map(async (e) => {
        const pk = taskPk(e.tenantId, e.taskId);
        const seen = tried.get(pk) ?? new Set<string>();
        tried.set(pk, seen);
        const fresh = [...new Set(keysOf(pk))].filter((sk): sk is string => sk !== undefined && !seen.has(sk));
        for (const sk of fresh) seen.add(sk);
        const shard = archivePk(leaseShard(e.tenantId, e.taskId));
        const versioned = { ConditionExpression: '#v <= :v', ExpressionAttributeNames: { '#v': 'version' }, ExpressionAttributeValues: { ':v': e.version } };
        const deleted = await Promise.all(fresh.map((sk) => conditionalDelete(ctx, { pk: shard, sk }, versioned)));
        if (deleted.includes(true)) ctx.listedArchiveKeys.forget(pk);
        return deleted.includes(true);
      }),
    );
    return batch.filter((_, i) => !done[i]);
  };
  const left = await attempt(entries, (pk) => [ctx.listedArchiveKeys.get(pk), ctx.headers.get(pk)?.archiveSk]);
  if (!left.length) return;
  const read = await readArchiveKeys(ctx, left);
  await attempt(left, (pk) => [read.get(pk)]);
}

/** The archive entry key each of these tasks' headers names (BatchGetItem, 100 keys a call), by task pk. */
async function readArchiveKeys(ctx: DynamoDbContext, entries: { tenantId: string; taskId: string }[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const pks = [...new Set(entries.map((e) => taskPk(e.tenantId, e.taskId)))];
  for (let i = 0; i < pks.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = pks.slice(i, i + 100).map((pk) => ({ pk, sk: HEADER_SK }));
    // Unprocessed keys (throttling) are asked again, a bounded number of times.
    for (let attempt = 0; keys?.length && attempt < 5; attempt++) {
      const result: WireOutput = await ctx.wire.send(
        new BatchGetCommand({ RequestItems: { [ctx.table]: { Keys: keys, ProjectionExpression: 'pk, archiveSk', ConsistentRead: true } } }),
      );
      for (const item of result.Responses?.[ctx.table] ?? []) if (typeof item.archiveSk === 'string') out.set(String(item.pk), item.archiveSk);
      keys = result.UnprocessedKeys?.[ctx.table]?.Keys;
    }
  }
  return out;
}

/** A delete under a condition; false when the condition failed (or the item is not there). */
async function conditionalDelete(ctx: DynamoDbContext, key: Record<string, unknown>, condition: WireInput): Promise<boolean> {
  try {
    await ctx.wire.send(new DeleteCommand({ TableName: ctx.table, Key: key, ...condition }));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * The archive index follows the header as the lease index does (leaseIndexWrites), when kept:
 * every commit's transaction (dynamodb-commit.ts) puts the task's entry at the commit's time with
 * its new version (carrying the task's expiry, as a lease entry does) and deletes the entry it
 * replaces, which the header names (`archiveSk`), so this needs no read. A store that does not keep the index writes no item for it, and its header
 * carries the entry's key on, so a later commit that keeps the index still deletes that entry. An
 * expired incarnation's entry is left for the listing, as a lease entry is.
 */
export function archiveIndexWrites(
  table: string,
  tenantId: string,
  stored: TaskRecord,
  current: HeaderSnapshot | undefined,
  listed: { inc: string; exp: number | undefined; at: number | undefined },
) {
  const { inc, exp, at } = listed;
  if (at === undefined) return { sk: current?.archiveSk, items: [] };
  const { taskId } = stored;
  const pk = archivePk(leaseShard(tenantId, taskId));
  const sk = archiveSk(at, tenantId, taskId);
  const items: TransactItem[] = [];
  if (current?.archiveSk !== undefined && current.archiveSk !== sk) items.push({ Delete: { TableName: table, Key: { pk, sk: current.archiveSk } } });
  const expiry = exp === undefined ? {} : { taskExp: exp, ttl: Math.ceil(exp / 1000) };
  const entry = { pk, sk, tenantId, taskId, version: stored.version, changedAt: at, inc, ...expiry };
  items.push({ Put: { TableName: table, Item: entry } });
  return { sk, items };
}
