import { DynamoDbWire, isConditionFailure, QueryCommand, UpdateCommand } from './dynamodb-wire';
import { ttlHorizon } from '../ttl-horizon.util';
import { HEADER_SK, REQUEST_INDEX_SK, requestIndexPk, taskPk } from './dynamodb-keys';

/**
 * Keeps the `ttl` of a task's other items (requests, request index, session index) from ever
 * falling before the task's expiry, without rewriting them on every commit.
 *
 * Invariant: an item's `ttl` only ever grows (or is removed, i.e. grows to "never"), and every
 * item of a committed header has `ttl` >= the header's `childTtl`, or none. So items are extended
 * *before* the commit that needs it (harmless if that commit then loses), and never shortened.
 * An item that has no `ttl` keeps none: when a task that never expired is given an expiry, its
 * earlier items outlive it (a small leak, instead of a race that could delete live data).
 */
export interface ChildTtlPlan {
  /** `childTtl` of the new header, and the `ttl` of the items this commit writes (epoch seconds). */
  childTtl?: number;
  /** Extend the task's existing items to this first (`'remove'`: drop their ttl). */
  extendTo?: number | 'remove';
}

export function planChildTtl(live: boolean, storedChildTtl: number | undefined, expMs: number | undefined, now = Date.now()): ChildTtlPlan {
  const hasTtl = live && storedChildTtl !== undefined;
  if (expMs === undefined) return hasTtl ? { extendTo: 'remove' } : {};
  if (hasTtl && Math.ceil(expMs / 1000) <= storedChildTtl!) return { childTtl: storedChildTtl };
  const childTtl = Math.ceil(ttlHorizon(expMs, now) / 1000);
  return hasTtl ? { childTtl, extendTo: childTtl } : { childTtl };
}

/** Applies `extendTo` to every item of the task (cost proportional to its requests, but rare). */
export async function extendChildTtl(
  wire: DynamoDbWire,
  table: string,
  target: { tenantId: string; taskId: string; session?: { pk: string; sk: string } },
  extendTo: number | 'remove',
): Promise<void> {
  const pk = taskPk(target.tenantId, target.taskId);
  const keys: { pk: string; sk: string }[] = target.session ? [target.session] : [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await wire.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ProjectionExpression: 'sk, requestId',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      if (item.sk === HEADER_SK) continue;
      keys.push({ pk, sk: item.sk as string });
      if (typeof item.requestId === 'string') keys.push({ pk: requestIndexPk(target.tenantId, item.requestId), sk: REQUEST_INDEX_SK });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  for (let i = 0; i < keys.length; i += 16) {
    await Promise.all(keys.slice(i, i + 16).map((key) => extendOne(wire, table, key, extendTo)));
  }
}

async function extendOne(wire: DynamoDbWire, table: string, key: { pk: string; sk: string }, extendTo: number | 'remove') {
  const remove = extendTo === 'remove';
  try {
    await wire.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        // Only ever later (never resurrects a deleted item: attribute_exists fails on a missing one).
        UpdateExpression: remove ? 'REMOVE #ttl' : 'SET #ttl = :t',
        ConditionExpression: remove ? 'attribute_exists(#ttl)' : 'attribute_exists(#ttl) AND #ttl < :t',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: remove ? undefined : { ':t': extendTo },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}
