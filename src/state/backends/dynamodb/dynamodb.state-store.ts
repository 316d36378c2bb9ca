import { AttributeValue, DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { RequestRecord, TaskRecord } from '../../state.entities';
import { StateCorruptError, VersionConflictError } from '../../state.errors';
import { isExpired } from '../../state-store.util';
import { StoreClock } from '../../store-clock';
import { DYNAMODB_CLOCK_SKEW_MS, sampleDateHeaders } from './dynamodb-clock';
import { pageLiveEntries } from '../live-page.util';
import { expiresAtMs } from '../ttl-horizon.util';
import { buildCommit, HeaderSnapshot, isLive, MAX_REQUESTS_PER_COMMIT, MAX_REQUESTS_PER_LEASE_COMMIT, snapshotOf } from './dynamodb-commit';
import { HeaderCache } from './dynamodb-header-cache';
import { toStateError } from './dynamodb-errors';
import { DEFAULT_MAX_REQUEST_BYTES, deleteKeys, incarnationPartKeys, layoutRequests, partItems, partKeysOf, putItems, readRequestItem, readSplits, replaceSplits, RequestLayout, withParts } from './dynamodb-parts';
import { readLeaseEntries } from './dynamodb-leases';
import { appendStreamItems, readStreamItems, streamItemKeys } from './dynamodb-stream';
import { HEADER_SK, itemName, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, REQUESTS_END, sessionPk, taskPk } from './dynamodb-keys';
import { ChildTtlPlan, extendChildTtl, planChildTtl } from './dynamodb-ttl';

// The key schema is documented in dynamodb-keys.ts, the commit transaction in dynamodb-commit.ts.

export interface DynamoDbStateStoreOptions {
  table: string;
  region: string;
  /** DynamoDB Local or another endpoint; unset for AWS. */
  endpoint?: string;
  /** Explicit credentials (DynamoDB Local); unset: the SDK's default provider chain. */
  credentials?: DynamoDBClientConfig['credentials'];
  /** Per-attempt bound, in ms, on connecting and on each request (default 1000 and 3000). */
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** The largest request record admitted (StateStore.maxRequestBytes; default 64 MiB, dynamodb-parts.ts). */
  maxRequestBytes?: number;
  /** Task headers remembered for commits (dynamodb-header-cache.ts; default 10,000, 0: none). */
  headerCacheSize?: number;
}

type Item = Record<string, unknown>;

/**
 * Requests (or stream items) removed per deletion step at most: two deletes each, with the check
 * of the marked header, in one transaction of at most 100 items.
 */
const MAX_DELETE_BATCH = 49;

/** Concurrent transactions on one item can cancel each other (`TransactionConflict`); retry these. */
const TRANSACTION_CONFLICT_ATTEMPTS = 4;

/**
 * DynamoDB backend: one table; a commit is one TransactWriteItems whose header Put is conditioned
 * on the version it expects, so a lost race writes nothing.
 */
export class DynamoDbStateStore extends StateStore {
  private readonly client: DynamoDBClient;
  private readonly doc: DynamoDBDocumentClient;
  private readonly table: string;
  override readonly maxRequestBytes: number;
  /** DynamoDB's clock, from the `Date` header of its answers (dynamodb-clock.ts). */
  private readonly clock = new StoreClock({ resolutionMs: 1000 });
  override readonly clockSkewMs = DYNAMODB_CLOCK_SKEW_MS;
  private readonly headers: HeaderCache;

  constructor(options: DynamoDbStateStoreOptions) {
    super();
    this.table = options.table;
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    this.headers = new HeaderCache(options.headerCacheSize);
    this.client = new DynamoDBClient({
      region: options.region,
      endpoint: options.endpoint,
      credentials: options.credentials,
      // One retry (for throttling and blips), each attempt bounded: an unreachable endpoint fails fast.
      maxAttempts: 2,
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs ?? 1000,
        requestTimeout: options.requestTimeoutMs ?? 3000,
        throwOnRequestTimeout: true,
      },
    });
    sampleDateHeaders(this.client, this.clock);
    this.doc = DynamoDBDocumentClient.from(this.client);
  }

  override now(): number {
    return this.clock.now();
  }

  /** The underlying client (for creating the table at boot). */
  get dynamoDbClient(): DynamoDBClient {
    return this.client;
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.run(async () => (await this.readHeader(tenantId, taskId))?.task);
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.run(async () => (await this.readHeader(tenantId, taskId, true))?.task);
  }

  /**
   * A step removes up to `batchSize` (at most 49) stream items, else up to that many requests with
   * their index entries, in one transaction, then the parts those requests named; once no request
   * is left, a step removes the parts of the task's incarnation no request names, if any; the step
   * that finds none removes the header with its session entry, then the owner's entry for the
   * session if that left it empty.
   *
   * Every transaction of a step also checks that the header is still the marked one it read
   * (version and incarnation): between that read and a write, another process may have finished
   * the deletion and a follow-on created the id anew, whose items must not go. While the marked
   * header is there no newer incarnation can hold an item, so what the transaction removes is the
   * old task's (or older garbage). A cancelled transaction writes nothing, and the next step reads again.
   */
  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    return this.run(async () => {
      const pk = taskPk(tenantId, taskId);
      const header = await this.get({ pk, sk: HEADER_SK });
      // A commit built on a remembered header of this task would fail its condition anyway.
      this.headers.forget(pk);
      if (!header) return true;
      if (parseItem<TaskRecord>(header).deletingAt === undefined) return true;
      const marked = { '#v': 'version', '#i': 'inc' };
      const pinned = { ConditionExpression: '#v = :v AND #i = :i', ExpressionAttributeNames: marked, ExpressionAttributeValues: { ':v': header.version, ':i': header.inc } };
      const stillMarked = { ConditionCheck: { TableName: this.table, Key: { pk, sk: HEADER_SK }, ...pinned } };
      const del = (key: { pk: string; sk: string }) => ({ Delete: { TableName: this.table, Key: key } });
      const limit = Math.max(1, Math.min(MAX_DELETE_BATCH, Math.floor(batchSize)));

      const events = await streamItemKeys(this.doc, this.table, pk, limit);
      if (events.length) {
        await this.deleteTransaction([stillMarked, ...events.map(del)]);
        return false;
      }
      const found = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :req)',
          ExpressionAttributeValues: { ':pk': pk, ':req': 'REQ#' },
          ProjectionExpression: 'pk, sk, requestId, gen, parts',
          ConsistentRead: true,
          Limit: limit,
        }),
      );
      const requests = found.Items ?? [];
      if (requests.length) {
        const items = requests.flatMap((i) => [
          del({ pk, sk: String(i.sk) }),
          ...(typeof i.requestId === 'string' ? [del({ pk: requestIndexPk(tenantId, i.requestId), sk: REQUEST_INDEX_SK })] : []),
        ]);
        // The parts they named once they are surely the old task's: a step cut short in between
        // leaves parts no request names, of the marked incarnation, which a later step sweeps up.
        if (await this.deleteTransaction([stillMarked, ...items])) await deleteKeys(this.doc, this.table, requests.flatMap(partKeysOf));
        return false;
      }
      // Parts no request names (of writers that crashed or lost, dynamodb-parts.ts): rare, all at once.
      const leftovers = await incarnationPartKeys(this.doc, this.table, pk, header.inc);
      if (leftovers.length) {
        await deleteKeys(this.doc, this.table, leftovers);
        return false;
      }
      const session = { pk: String(header.sessionPk), sk: String(header.sessionSk) };
      const removed = await this.deleteTransaction([{ Delete: { TableName: this.table, Key: { pk, sk: HEADER_SK }, ...pinned } }, del(session)]);
      // Another process finishing the same deletion got there first: the next step sees what is left.
      if (!removed) return false;
      if (!(await this.sessionHasEntries(session.pk))) {
        const task = parseItem<TaskRecord>(header);
        await this.doc.send(new DeleteCommand({ TableName: this.table, Key: { pk: ownerSessionsPk(tenantId, task.ownerId), sk: task.sessionId } }));
      }
      return true;
    });
  }

  /**
   * One page (`count` entries after `after`) of an index partition: an owner's sessions or a
   * session's tasks; with `projection`, only those attributes of each.
   */
  private async queryIndexPage(pk: string, after: string | undefined, count: number, projection?: string): Promise<{ items: Record<string, unknown>[]; more: boolean }> {
    const result = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
        Limit: count,
        ExclusiveStartKey: after === undefined ? undefined : { pk, sk: after },
        ProjectionExpression: projection,
      }),
    );
    return { items: result.Items ?? [], more: result.LastEvaluatedKey !== undefined };
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    const pk = ownerSessionsPk(tenantId, ownerId);
    return this.run(() =>
      pageLiveEntries(page, async (after, count) => {
        const { items, more } = await this.queryIndexPage(pk, after, count);
        const entries = await Promise.all(
          items.map(async (entry) => {
            const sessionId = String(entry.sessionId);
            // A session whose entries all expired is dead.
            const live = await this.sessionHasEntries(sessionPk(tenantId, ownerId, sessionId));
            return { position: String(entry.sk), item: live ? sessionId : undefined };
          }),
        );
        return { entries, more };
      }),
    );
  }

  /**
   * One deletion transaction; false when it was cancelled (another process finishing the same
   * deletion deleted or held the same items: harmless, the caller's next step re-reads).
   */
  private async deleteTransaction(items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>): Promise<boolean> {
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'TransactionCanceledException') return false;
      throw err;
    }
  }

  private async sessionHasEntries(pk: string): Promise<boolean> {
    return (await this.queryIndexPage(pk, undefined, 1, 'pk')).items.length > 0;
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    return this.run(async () => {
      const pk = taskPk(tenantId, taskId);
      // The header sorts before every REQ# item (and after the EVT# stream items, not read here), and
      // request parts after them (RPART#, read by key when a request names them), so one Query reads
      // the task and its requests.
      const items: Item[] = [];
      let start: Item | undefined;
      do {
        const page = await this.doc.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :header AND :end',
            ExpressionAttributeValues: { ':pk': pk, ':header': HEADER_SK, ':end': REQUESTS_END },
            ConsistentRead: true,
            ExclusiveStartKey: start,
          }),
        );
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      const header = items.find((i) => i.sk === HEADER_SK);
      if (!header || !this.noteHeader(pk, header).task) return [];
      const mine = items.filter((i) => i.sk !== HEADER_SK && i.inc === header.inc);
      // A split request is put together from the parts it names (dynamodb-parts.ts); one whose parts
      // a concurrent rewrite replaced since this query read it is read again on its own.
      const whole = await Promise.all(
        mine.map(async (i) => (await withParts(this.doc, this.table, i)) ?? (await readRequestItem(this.doc, this.table, pk, Number(String(i.sk).slice('REQ#'.length))))),
      );
      return whole
        .filter((i): i is Item => i !== undefined && i.inc === header.inc)
        .map((i) => parseItem<RequestRecord>(i))
        .sort((a, b) => a.seq - b.seq);
    });
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    return this.run(async () => {
      const ref = await this.get({ pk: requestIndexPk(tenantId, requestId), sk: REQUEST_INDEX_SK });
      if (!ref) return undefined;
      const taskId = String(ref.taskId);
      const [header, item] = await Promise.all([
        this.readHeader(tenantId, taskId),
        readRequestItem(this.doc, this.table, taskPk(tenantId, taskId), Number(ref.seq)),
      ]);
      // All three must belong to the task's current incarnation (see `inc` in dynamodb-keys.ts).
      if (!header?.task || !item || header.inc !== ref.inc || item.inc !== ref.inc) return undefined;
      const record = parseItem<RequestRecord>(item);
      return record.requestId === requestId ? record : undefined;
    });
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    const pk = sessionPk(tenantId, ownerId, sessionId);
    return this.run(() =>
      pageLiveEntries(page, async (after, count) => {
        const { items, more } = await this.queryIndexPage(pk, after, count);
        const entries = await Promise.all(
          items.map(async (entry) => {
            const header = await this.readHeader(tenantId, String(entry.taskId), page.includeDeleting);
            // An entry of an earlier incarnation of the task id is dead.
            const mine = header?.task && header.inc === entry.inc ? header.task : undefined;
            return { position: String(entry.sk), item: mine };
          }),
        );
        return { entries, more };
      }),
    );
  }

  /**
   * A commit expecting version n > 0 builds on the header this store last wrote or read when that is
   * version n (with the expected writeId): no read first; else it reads the header. A create reads
   * nothing: its condition is that no header exists, and only when an expired one is there (the
   * failure returns it) does it re-create over that one. Either way a lost race writes nothing.
   */
  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    const { taskId } = write.task;
    const most = write.task.lease ? MAX_REQUESTS_PER_LEASE_COMMIT : MAX_REQUESTS_PER_COMMIT;
    if ((write.requests?.length ?? 0) > most) {
      throw new RangeError(`A commit may write at most ${most} requests${write.task.lease ? ' when the task holds a lease' : ''}`);
    }
    return this.run(async () => {
      const now = this.now();
      const pk = taskPk(tenantId, taskId);
      const requests = write.requests ?? [];
      const current = write.expectedVersion > 0 ? await this.expectedHeader(tenantId, write, now) : undefined;

      const ttl = planChildTtl(current !== undefined, current?.childTtl, expiresAtMs(write.task.expiresAt), now);
      if (current && ttl.extendTo !== undefined) {
        const session = { pk: current.sessionPk, sk: current.sessionSk };
        await extendChildTtl(this.doc, this.table, { tenantId, taskId, session }, ttl.extendTo);
      }
      // A create's incarnation is new, also when it ends up re-creating over an expired task.
      const inc = current ? current.inc : randomUUID();
      const records = requests.map((r) => ({ seq: r.seq, requestId: r.requestId, json: JSON.stringify({ ...r, tenantId }) }));
      const headerBytes = Buffer.byteLength(JSON.stringify(write.task)) + JSON.stringify(current?.splits ?? {}).length;
      const layouts = layoutRequests(records, headerBytes);
      // Parts first: invisible until the transaction's request item names them.
      const parts = partItems(pk, layouts, { inc, ...(ttl.childTtl === undefined ? {} : { ttl: ttl.childTtl }) });
      await putItems(this.doc, this.table, parts);
      const attempt = { tenantId, write, ttl, now, inc, layouts };
      try {
        let outcome = await this.apply(attempt, current);
        if ('found' in outcome && !current) {
          const found = outcome.found ?? (await this.readHeader(tenantId, taskId))?.snapshot;
          if (found && !isLive(found, now)) outcome = await this.apply(attempt, found);
        }
        if ('stored' in outcome) return outcome.stored;
        const actual = outcome.found && isLive(outcome.found, now) ? outcome.found.version : 0;
        throw new VersionConflictError(taskId, write.expectedVersion, actual);
      } catch (err) {
        // Cancelled: its parts are nobody's. Any other failure may yet have applied (a lost answer): keep them.
        if (err instanceof VersionConflictError) await this.dropGarbage(parts as { pk: string; sk: string }[]);
        throw err;
      }
    });
  }

  /**
   * The header a commit expecting `write.expectedVersion` (> 0) builds on: the remembered one when it
   * is that version and writeId, else the one read now; a VersionConflictError when it is not that.
   */
  private async expectedHeader(tenantId: string, write: TaskWrite, now: number): Promise<HeaderSnapshot> {
    const { taskId } = write.task;
    const fits = (h: HeaderSnapshot | undefined) =>
      isLive(h, now) && h.version === write.expectedVersion && (write.expectedWriteId === undefined || h.writeId === write.expectedWriteId);
    const remembered = this.headers.get(taskPk(tenantId, taskId));
    if (fits(remembered)) return remembered!;
    const current = (await this.readHeader(tenantId, taskId))?.snapshot;
    if (fits(current)) return current!;
    throw new VersionConflictError(taskId, write.expectedVersion, isLive(current, now) ? current.version : 0);
  }

  /**
   * One commit transaction on top of `current` (undefined: no header). On success the stored task;
   * when the header's condition failed, the header found instead (undefined: none), remembered.
   */
  private async apply(
    attempt: { tenantId: string; write: TaskWrite; ttl: ChildTtlPlan; now: number; inc: string; layouts: RequestLayout[] },
    current: HeaderSnapshot | undefined,
  ): Promise<{ stored: TaskRecord } | { found?: HeaderSnapshot }> {
    const { tenantId, write, ttl, now, inc, layouts } = attempt;
    const pk = taskPk(tenantId, write.task.taskId);
    const base = !current ? {} : (current.splits ?? (await readSplits(this.doc, this.table, pk)));
    const { splits, replaced } = replaceSplits(pk, base, layouts);
    const { input, json, snapshot, ownerSession } = buildCommit(this.table, tenantId, write, current, ttl, now, { inc, requests: layouts, splits });
    if (ownerSession) await this.doc.send(new PutCommand({ TableName: this.table, Item: ownerSession }));
    let failed: { old?: Item } | undefined;
    try {
      failed = await this.transact(input, write.task.taskId, write.expectedVersion);
    } catch (err) {
      this.headers.forget(pk);
      throw err;
    }
    if (failed) {
      const found = failed.old && oldSnapshot(failed.old);
      if (found) this.headers.remember(pk, found);
      else this.headers.forget(pk);
      return { found };
    }
    this.headers.remember(pk, snapshot);
    await this.dropGarbage(replaced);
    return { stored: JSON.parse(json) as TaskRecord };
  }

  /** The lease entries (dynamodb-leases.ts), paged by sort key. */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    return this.run(() => pageLiveEntries(page, (after, count) => readLeaseEntries(this.doc, this.table, { before, now: this.now() }, after, count)));
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    if (events.length) await this.run(() => appendStreamItems(this.doc, this.table, tenantId, taskId, seq, events, requestId));
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    return this.run(() => readStreamItems(this.doc, this.table, tenantId, taskId, seq, after));
  }

  async ping(): Promise<void> {
    // A GetItem needs only the permission the store uses anyway (DescribeTable would need another).
    await this.run(() => this.get({ pk: '#ping', sk: '#ping' }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  /** Best effort: what a failure leaves carries the task's ttl and goes with its deletion. */
  private async dropGarbage(keys: { pk: string; sk: string }[]): Promise<void> {
    if (keys.length) await deleteKeys(this.doc, this.table, keys.map(({ pk, sk }) => ({ pk, sk }))).catch(() => undefined);
  }

  /**
   * Sends a commit transaction; undefined when it applied, `{ old }` when the header's condition
   * failed (`old`: the header as it is, when there is one).
   */
  private async transact(input: ConstructorParameters<typeof TransactWriteCommand>[0], taskId: string, expected: number): Promise<{ old?: Item } | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand(input));
        return undefined;
      } catch (err) {
        const reasons = (err as { CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] }).CancellationReasons;
        if (!reasons) throw err;
        const header = reasons[0];
        if (header?.Code === 'ConditionalCheckFailed') return { old: header.Item && unmarshall(header.Item) };
        // The same transaction re-applies only if its condition still holds, so retrying is safe;
        // a writer still in the way after that is reported as the conflict it is.
        if (!reasons.some((r) => r.Code === 'TransactionConflict')) throw err;
        if (attempt >= TRANSACTION_CONFLICT_ATTEMPTS) throw new VersionConflictError(taskId, expected);
        await sleep(10 + Math.random() * 40 * attempt);
      }
    }
  }

  /** The header: its task (undefined when not live), incarnation and snapshot, remembered for commits. */
  private async readHeader(tenantId: string, taskId: string, includeDeleting = false) {
    const pk = taskPk(tenantId, taskId);
    const item = await this.get({ pk, sk: HEADER_SK });
    if (!item) {
      this.headers.forget(pk);
      return undefined;
    }
    return this.noteHeader(pk, item, includeDeleting);
  }

  /** A header item just read, parsed and remembered; a corrupt one is forgotten (commits then read it, and fail). */
  private noteHeader(pk: string, item: Item, includeDeleting = false) {
    let task: TaskRecord;
    try {
      task = parseItem<TaskRecord>(item);
    } catch (err) {
      this.headers.forget(pk);
      throw err;
    }
    const snapshot = snapshotOf(item, task);
    this.headers.remember(pk, snapshot, true);
    return { task: liveRecord(task, this.now(), includeDeleting), inc: item.inc, snapshot };
  }

  private async get(key: { pk: string; sk: string }): Promise<Item | undefined> {
    const result = await this.doc.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
    return result.Item;
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toStateError(err, this.table);
    }
  }
}

/** The header's task; undefined when expired, or marked for deletion (unless `deleting`). */
function liveRecord(task: TaskRecord, now: number, deleting = false): TaskRecord | undefined {
  return isExpired(task, now) || (!deleting && task.deletingAt !== undefined) ? undefined : task;
}

/** The snapshot of a header a failed condition returned; undefined when its record does not parse. */
function oldSnapshot(item: Item): HeaderSnapshot | undefined {
  try {
    return snapshotOf(item, parseItem<TaskRecord>(item));
  } catch {
    return undefined;
  }
}

/** The record in `data`; anything else is corrupt, reported with the item's key and left as it is. */
function parseItem<T>(item: Item): T {
  const name = itemName(item as { pk: string; sk: string });
  if (typeof item.data !== 'string') throw new StateCorruptError(name);
  let value: unknown;
  try {
    value = JSON.parse(item.data);
  } catch (err) {
    throw new StateCorruptError(name, err);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StateCorruptError(name);
  return value as T;
}
