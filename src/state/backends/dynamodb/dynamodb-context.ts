import { DynamoDbWire } from './dynamodb-wire';
import { ListedArchiveKeys } from './dynamodb-archive-keys';
import { HeaderCache } from './dynamodb-header-cache';

/**
 * What the facade (dynamodb.state-store.ts) hands each room (src/state/backends/README.md): the
 * table, the task headers this process remembers for commits, and the store's clock. The facade
 * maps whatever a room throws to the contract's errors (dynamodb-errors.ts).
 */
export interface DynamoDbContext {
  /** The store's client (dynamodb-wire.ts). */
  readonly wire: DynamoDbWire;
  readonly table: string;
  readonly headers: HeaderCache;
  /** Whether commits keep the archive index (DynamoDbStateStoreOptions.archiveIndex). */
  readonly archiveIndex: boolean;
  /** The archive entry keys this store last listed (dynamodb-archive.ts). */
  readonly listedArchiveKeys: ListedArchiveKeys;
  /**
   * The time (whole ms) a commit made at `now` lists its task at in the archive index: after (by at
   * least 1 ms) every one this store listed earlier, as the estimate of the clock can step back
   * (store-clock.ts); equal times would leave the order of this store's own commits to the key's tie-break.
   */
  changedAt(now: number): number;
  now(): number;
}
