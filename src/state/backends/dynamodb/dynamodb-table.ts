import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  isServiceError,
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
 * The usual boot finds the table ready: its status and its TTL's are asked at once, one round trip.
 */
export async function createStateTable(wire: DynamoDbWire, tableName: string, maxWaitSeconds = 60): Promise<boolean> {
  const [status, ttl] = await Promise.all([tableStatus(wire, tableName), ttlStatus(wire, tableName)]);
  let created = false;
  if (status === undefined) {
    try {
      await wire.send(new CreateTableCommand(stateTableDefinition(tableName)));
      created = true;
    } catch (err) {
      // Another replica (or deploy job) created it since.
      if (!isServiceError(err, 'ResourceInUseException')) throw err;
    }
  }
  if (status !== 'ACTIVE') await waitUntilActive(wire, tableName, maxWaitSeconds);
  const ttlNow = status === undefined ? await ttlStatus(wire, tableName) : ttl;
  if (ttlNow !== 'ENABLED' && ttlNow !== 'ENABLING') {
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
  while ((await tableStatus(wire, tableName)) !== 'ACTIVE') {
    if (Date.now() >= deadline) throw new Error(`DynamoDB table ${tableName} is not ACTIVE after ${maxWaitSeconds} s`);
    await sleep(1000);
  }
}

/** The table's status (`ACTIVE`, `CREATING`, …); undefined when there is no such table (or not yet). */
async function tableStatus(wire: DynamoDbWire, tableName: string): Promise<string | undefined> {
  const described = await wire.send(new DescribeTableCommand({ TableName: tableName })).catch(missingTable);
  return (described?.Table as { TableStatus?: string } | undefined)?.TableStatus;
}

/** The table's TTL status (`ENABLED`, `DISABLED`, …); undefined when there is no such table. */
async function ttlStatus(wire: DynamoDbWire, tableName: string): Promise<string | undefined> {
  const described = await wire.send(new DescribeTimeToLiveCommand({ TableName: tableName })).catch(missingTable);
  return (described?.TimeToLiveDescription as { TimeToLiveStatus?: string } | undefined)?.TimeToLiveStatus;
}

function missingTable(err: unknown): undefined {
  if (isServiceError(err, 'ResourceNotFoundException')) return undefined;
  throw err;
}
