import { IdempotencyEntry } from '../../state.entities';
import { DynamoDbContext } from './dynamodb-context';
import { Item } from './dynamodb-items';
import { getItem, parseItem } from './dynamodb-query';
import { IDEMPOTENCY_SK, idempotencyPk } from './dynamodb-keys';

// Idempotency-Key entries (StateStore.getIdempotencyEntry; the item in dynamodb-keys.ts): the
// commit that claims a key puts its entry in the commit's own transaction (dynamodb-commit.ts), so
// the entry is stored exactly when the write is; DynamoDB's TTL removes it once expired.

/** The entry stored under `key`, read consistently; undefined when there is none or it has expired. */
export async function readIdempotencyEntry(ctx: DynamoDbContext, tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
  const item = await getItem(ctx, { pk: idempotencyPk(tenantId, key), sk: IDEMPOTENCY_SK });
  return item && liveEntry(item, ctx.now());
}

/**
 * The entry of an entry item, undefined once it has expired at `now` (DynamoDB's TTL deletes
 * lazily); one that does not parse is corrupt (StateCorruptError). Expired means what the claim's
 * condition means by it (claimItem), so a read and a claim never disagree on whether a key is held.
 */
export function liveEntry(item: Item, now: number): IdempotencyEntry | undefined {
  if (typeof item.expiresAt === 'number' && item.expiresAt <= now) return undefined;
  return parseItem<IdempotencyEntry>(item);
}

/**
 * The Put that claims `entry.key` in a commit's transaction: it applies only when no entry is
 * stored under the key or the stored one has expired at `now` (the store's clock; the expired one
 * is then replaced). When it does not, the transaction is cancelled and its reason carries the
 * entry that holds the key (ALL_OLD), so the refused commit needs no read to report it.
 */
export function claimItem(table: string, tenantId: string, entry: IdempotencyEntry, now: number) {
  return {
    Put: {
      TableName: table,
      Item: {
        pk: idempotencyPk(tenantId, entry.key),
        sk: IDEMPOTENCY_SK,
        data: JSON.stringify(entry),
        expiresAt: entry.expiresAt,
        ttl: Math.ceil(entry.expiresAt / 1000),
      },
      ConditionExpression: 'attribute_not_exists(pk) OR #x <= :now',
      ExpressionAttributeNames: { '#x': 'expiresAt' },
      ExpressionAttributeValues: { ':now': now },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    },
  };
}

/**
 * The live entry that refused a claim: the one the cancelled transaction returned, else (a claim
 * that kept meeting other writers of the key) the one stored now; undefined when it has expired
 * or gone since.
 */
export async function refusingEntry(ctx: DynamoDbContext, tenantId: string, key: string, returned: Item | undefined): Promise<IdempotencyEntry | undefined> {
  return returned ? liveEntry(returned, ctx.now()) : readIdempotencyEntry(ctx, tenantId, key);
}
