import { DeleteCommand, DynamoDbWire, isConditionFailure, QueryCommand, TransactItem } from './dynamodb-wire';
import { LeaseEntry } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { wakeAt } from '../../state-store.util';
import { IndexEntry } from '../live-page.util';
import { HeaderSnapshot } from './dynamodb-header-cache';
import { LEASE_SHARDS, leasePk, leaseShard, leaseSk, leaseSkUpTo } from './dynamodb-keys';

/**
 * One read of the lease index (StateStore.listLapsedLeases; its items in dynamodb-keys.ts, written
 * by each commit: dynamodb-commit.ts): up to `count` entries that lapsed by `before`, strictly after
 * the position `after` (a sort key), in sort-key order across the partitions. Every partition is
 * asked for `count` at once and the answers merged: an entry a partition did not return sorts after
 * `count` it did, so the first `count` of the merge are the index's. An entry carries its task's
 * expiry: one of an expired task is dead, and deleted (conditioned on its incarnation, so an entry
 * a new incarnation put under the same key stays).
 */
export async function readLeaseEntries(
  wire: DynamoDbWire,
  table: string,
  span: { before: number; now: number },
  after: string | undefined,
  count: number,
): Promise<{ entries: IndexEntry<LeaseEntry>[]; more: boolean }> {
  const upTo = leaseSkUpTo(span.before);
  // Just above `after`: every key that extends it, or sorts after it, is above this.
  const from = after === undefined ? undefined : `${after}\u0000`;
  if (from !== undefined && from > upTo) return { entries: [], more: false };
  const pages = await Promise.all(
    Array.from({ length: LEASE_SHARDS }, (_, shard) =>
      wire.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: from === undefined ? 'pk = :pk AND sk <= :to' : 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': leasePk(shard), ':to': upTo, ...(from === undefined ? {} : { ':from': from }) },
          ConsistentRead: true,
          Limit: count,
        }),
      ),
    ),
  );
  const found = pages.flatMap((p) => p.Items ?? []).sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1));
  const taken = found.slice(0, count);
  const entries = await Promise.all(
    taken.map(async (item): Promise<IndexEntry<LeaseEntry>> => {
      const position = String(item.sk);
      if (item.taskExp !== undefined && Number(item.taskExp) <= span.now) {
        await dropEntry(wire, table, item);
        return { position, item: undefined };
      }
      // Keys count whole milliseconds: one lapsing later within `before`'s is not listed yet.
      const lapsed = Number(item.leaseAt) <= span.before;
      return { position, item: lapsed ? { tenantId: String(item.tenantId), taskId: String(item.taskId), expiresAt: Number(item.leaseAt) } : undefined };
    }),
  );
  return { entries, more: found.length > count || pages.some((p) => p.LastEvaluatedKey !== undefined) };
}

async function dropEntry(wire: DynamoDbWire, table: string, item: Record<string, unknown>): Promise<void> {
  try {
    await wire.send(
      new DeleteCommand({
        TableName: table,
        Key: { pk: item.pk, sk: item.sk },
        ConditionExpression: '#i = :i',
        ExpressionAttributeNames: { '#i': 'inc' },
        ExpressionAttributeValues: { ':i': item.inc },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/**
 * The lease index follows the header (StateStore.listLapsedLeases): while the task holds a lease
 * its entry is put in every commit's transaction (dynamodb-commit.ts; it carries the task's expiry,
 * by which a listing tells an entry of an expired task), and the entry of the lease it replaces or
 * releases is deleted. An expired incarnation's entry (`current` undefined on a re-create) is left
 * for the listing, which drops it by its own expiry: it never names the new incarnation.
 */
export function leaseIndexWrites(
  table: string,
  tenantId: string,
  stored: TaskRecord,
  current: HeaderSnapshot | undefined,
  inc: string,
  exp: number | undefined,
) {
  const { taskId } = stored;
  const pk = leasePk(leaseShard(tenantId, taskId));
  // Listed at its lease's expiry or its outbox's due delivery, whichever comes first (wakeAt).
  const at = wakeAt(stored);
  const sk = at !== undefined ? leaseSk(at, tenantId, taskId) : undefined;
  const items: TransactItem[] = [];
  if (current?.leaseSk !== undefined && current.leaseSk !== sk) items.push({ Delete: { TableName: table, Key: { pk, sk: current.leaseSk } } });
  if (at !== undefined && sk !== undefined) {
    const expiry = exp === undefined ? {} : { taskExp: exp, ttl: Math.ceil(exp / 1000) };
    items.push({ Put: { TableName: table, Item: { pk, sk, tenantId, taskId, inc, leaseAt: at, ...expiry } } });
  }
  return { sk, items };
}
