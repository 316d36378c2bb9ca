import { ArchiveEntry, LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state.entities';
import { StoreClock } from '../../store-clock';
import { DYNAMODB_CLOCK_SKEW_MS } from './dynamodb-clock';
import { CredentialsOption } from './aws-credentials';
import { DynamoDbWire } from './dynamodb-wire';
import { pageLiveEntries } from '../live-page.util';
import { markArchivedEntries, readUnarchived } from './dynamodb-archive';
import { ListedArchiveKeys } from './dynamodb-archive-keys';
import { commitTask } from './dynamodb-commit';
import { DynamoDbContext } from './dynamodb-context';
import { deleteTaskStep } from './dynamodb-delete';
import { HeaderCache } from './dynamodb-header-cache';
import { readIdempotencyEntry } from './dynamodb-idempotency';
import { toStateError } from './dynamodb-errors';
import { DEFAULT_MAX_REQUEST_BYTES } from './dynamodb-parts';
import { readLeaseEntries } from './dynamodb-leases';
import { getItem, readHeader, readOwnerSessions, readRequest, readRequests, readSessionTasks } from './dynamodb-query';
import { appendStreamItems, readStreamItems } from './dynamodb-stream';

// The key schema is documented in dynamodb-keys.ts, the commit transaction in dynamodb-commit.ts;
// each concern has its room beside this facade (src/state/backends/README.md).

export interface DynamoDbStateStoreOptions {
  table: string;
  region: string;
  /** DynamoDB Local or another endpoint; unset for AWS. */
  endpoint?: string;
  /** Explicit credentials (DynamoDB Local); unset: the environment's, else the AWS SDK's default chain (aws-credentials.ts). */
  credentials?: CredentialsOption;
  /** Per-attempt bound, in ms, from connecting to the answer's last byte (default 3000). */
  requestTimeoutMs?: number;
  /** The largest request record admitted (StateStore.maxRequestBytes; default 64 MiB, dynamodb-parts.ts). */
  maxRequestBytes?: number;
  /** Task headers remembered for commits (dynamodb-header-cache.ts; default 10,000, 0: none). */
  headerCacheSize?: number;
  /**
   * Keep the archive index (StateStore.listUnarchived; default false: commits write nothing for it).
   * Each commit then puts one more item and may delete one, so it writes one request fewer
   * (dynamodb-commit.ts).
   */
  archiveIndex?: boolean;
}

/**
 * DynamoDB backend: one table; a commit is one TransactWriteItems whose header Put is conditioned
 * on the version it expects, so a lost race writes nothing.
 */
export class DynamoDbStateStore extends StateStore {
  private readonly wire: DynamoDbWire;
  override readonly maxRequestBytes: number;
  /** DynamoDB's clock, from the `Date` header of its answers (dynamodb-clock.ts). */
  private readonly clock = new StoreClock({ resolutionMs: 1000 });
  override readonly clockSkewMs = DYNAMODB_CLOCK_SKEW_MS;
  /** The table, the remembered headers and the clock, as every room gets them (dynamodb-context.ts). */
  private readonly ctx: DynamoDbContext;
  /** The latest time this store listed a task at in the archive index (DynamoDbContext.changedAt). */
  private lastChangedAt = 0;

  constructor(options: DynamoDbStateStoreOptions) {
    super();
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.wire = new DynamoDbWire({
      region: options.region,
      endpoint: options.endpoint,
      credentials: options.credentials,
      // One retry (for throttling and blips), each attempt bounded: an unreachable endpoint fails fast.
      maxAttempts: 2,
      attemptTimeoutMs: options.requestTimeoutMs ?? 3000,
      // Every answer's Date header, errors included, is a sample of DynamoDB's clock (dynamodb-clock.ts).
      onDate: (serverMs, sentAt, receivedAt) => this.clock.observe(serverMs, sentAt, receivedAt),
    });
    this.ctx = {
      wire: this.wire,
      table: options.table,
      headers: new HeaderCache(options.headerCacheSize),
      archiveIndex: options.archiveIndex ?? false,
      listedArchiveKeys: new ListedArchiveKeys(),
      changedAt: (now) => (this.lastChangedAt = Math.max(this.lastChangedAt + 1, Math.floor(now))),
      now: () => this.now(),
    };
  }

  override now(): number {
    return this.clock.now();
  }

  /** The store's client (for creating the table at boot). */
  get dynamoDbWire(): DynamoDbWire {
    return this.wire;
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.run(async () => (await readHeader(this.ctx, tenantId, taskId))?.task);
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.run(async () => (await readHeader(this.ctx, tenantId, taskId, true))?.task);
  }

  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    return this.run(() => deleteTaskStep(this.ctx, tenantId, taskId, batchSize));
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    return this.run(() => readOwnerSessions(this.ctx, tenantId, ownerId, page));
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    return this.run(() => readRequests(this.ctx, tenantId, taskId));
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    return this.run(() => readRequest(this.ctx, tenantId, requestId));
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    return this.run(() => readSessionTasks(this.ctx, tenantId, ownerId, sessionId, page));
  }

  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    return this.run(() => commitTask(this.ctx, tenantId, write));
  }

  /** The entry items a commit's claim puts (dynamodb-idempotency.ts). */
  async getIdempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
    return this.run(() => readIdempotencyEntry(this.ctx, tenantId, key));
  }

  /** The lease entries (dynamodb-leases.ts), paged by sort key. */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    return this.run(() => pageLiveEntries(page, (after, count) => readLeaseEntries(this.ctx.wire, this.ctx.table, { before, now: this.now() }, after, count)));
  }

  /** The archive entries (dynamodb-archive.ts), paged by sort key. */
  async listUnarchived(before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
    return this.run(() => readUnarchived(this.ctx, before, page));
  }

  async markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
    return this.run(() => markArchivedEntries(this.ctx, entries));
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    if (events.length) await this.run(() => appendStreamItems(this.ctx.wire, this.ctx.table, tenantId, taskId, seq, events, requestId));
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    return this.run(() => readStreamItems(this.ctx.wire, this.ctx.table, tenantId, taskId, seq, after));
  }

  async ping(): Promise<void> {
    // A GetItem needs only the permission the store uses anyway (DescribeTable would need another).
    await this.run(() => getItem(this.ctx, { pk: '#ping', sk: '#ping' }));
  }

  async close(): Promise<void> {
    // Nothing to close: the kept-alive sockets are shared, unref'd when idle and closed after 30 s idle.
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toStateError(err, this.ctx.table);
    }
  }
}
