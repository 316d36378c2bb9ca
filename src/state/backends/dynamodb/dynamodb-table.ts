import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDbServiceError,
  DynamoDbWire,
  UpdateTimeToLiveCommand,
  WireInput,
} from './dynamodb-wire';

/** The state table (key schema in dynamodb-keys.ts): on-demand, so there is no capacity to tune. */
export function stateTableDefinition(tableName: string): WireInput {
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
export async function createStateTable(wire: DynamoDbWire, tableName: string, maxWaitSeconds = 60): Promise<boolean> {
  let created = true;
  try {
    await wire.send(new CreateTableCommand(stateTableDefinition(tableName)));
  } catch (err) {
    if (!(err instanceof DynamoDbServiceError && err.name === 'ResourceInUseException')) throw err;
    created = false;
  }
  await waitUntilActive(wire, tableName, maxWaitSeconds);
  const ttl = await wire.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = (ttl.TimeToLiveDescription as { TimeToLiveStatus?: string } | undefined)?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await wire.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
  }
  return created;
}

/** Polls the table's status (every second) until it is ACTIVE; an error after `maxWaitSeconds`. */
async function waitUntilActive(wire: DynamoDbWire, tableName: string, maxWaitSeconds: number): Promise<void> {
  const deadline = Date.now() + maxWaitSeconds * 1000;
  for (;;) {
    const described = await wire.send(new DescribeTableCommand({ TableName: tableName })).catch((err: unknown) => {
      // A table just created may not be described yet.
      if (err instanceof DynamoDbServiceError && err.name === 'ResourceNotFoundException') return undefined;
      throw err;
    });
    if ((described?.Table as { TableStatus?: string } | undefined)?.TableStatus === 'ACTIVE') return;
    if (Date.now() >= deadline) throw new Error(`DynamoDB table ${tableName} is not ACTIVE after ${maxWaitSeconds} s`);
    await sleep(1000);
  }
}
