import { DynamoDbWire, Item, QueryCommand } from './dynamodb-wire';

export type { Item };

/** Every item of partition `pk` whose sort key starts with `prefix`, all pages, read consistently. */
export async function queryPrefix(wire: DynamoDbWire, table: string, pk: string, prefix: string, projection?: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await wire.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':pk': pk, ':p': prefix },
        ProjectionExpression: projection,
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
