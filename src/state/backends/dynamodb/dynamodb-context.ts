import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { HeaderCache } from './dynamodb-header-cache';

/**
 * What the facade (dynamodb.state-store.ts) hands each room (src/state/backends/README.md): the
 * table, the task headers this process remembers for commits, and the store's clock. The facade
 * maps whatever a room throws to the contract's errors (dynamodb-errors.ts).
 */
export interface DynamoDbContext {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly headers: HeaderCache;
  now(): number;
}
