import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';

export type Item = Record<string, unknown>;

/** Every item of partition `pk` whose sort key starts with `prefix`, all pages, read consistently. */
export async function queryPrefix(doc: DynamoDBDocumentClient, table: string, pk: string, prefix: string, projection?: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await doc.send(
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
