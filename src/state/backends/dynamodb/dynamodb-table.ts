import {
  CreateTableCommand,
  CreateTableCommandInput,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';

/** The state table (key schema in dynamodb-keys.ts): on-demand, so there is no capacity to tune. */
export function stateTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    BillingMode: 'PAY_PER_REQUEST',
  };
}

export const TTL_ATTRIBUTE = 'ttl';

/**
 * Creates the table if it is missing, waits until it is ACTIVE, and enables TTL on `ttl`.
 * Idempotent: an existing table (or TTL already enabled) is fine. Returns whether it created it.
 */
export async function createStateTable(client: DynamoDBClient, tableName: string, maxWaitSeconds = 60): Promise<boolean> {
  let created = true;
  try {
    await client.send(new CreateTableCommand(stateTableDefinition(tableName)));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
    created = false;
  }
  await waitUntilTableExists({ client, maxWaitTime: maxWaitSeconds, minDelay: 1, maxDelay: 2 }, { TableName: tableName });
  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
  }
  return created;
}
