import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ListedArchiveKeys } from './dynamodb-archive-keys';
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
  /** Whether commits keep the archive index (DynamoDbStateStoreOptions.archiveIndex). */
  readonly archiveIndex: boolean;
  /** The archive entry keys this store last listed (dynamodb-archive.ts). */
  readonly listedArchiveKeys: ListedArchiveKeys;
  now(): number;
}
