import { IdempotencyEntry, RequestRecord, TaskRecord } from './state.entities';

/**
 * One atomic write to a task: the task header, compare-and-set on its version, together with the
 * request records it touches.
 *
 * - `expectedVersion: 0` creates the task; it fails with VERSION_CONFLICT if it already exists.
 * - `expectedVersion: n > 0` succeeds only if the stored version is exactly n.
 * - The stored version becomes `expectedVersion + 1` (what `task.version` says on input is ignored).
 * - Either everything in the write is stored, or nothing is.
 * - Cost is proportional to the records written, never to the task's whole history.
 */
export interface TaskWrite {
  task: TaskRecord;
  expectedVersion: number;
  /** Request records to insert or replace (by `seq`), typically the one new or running request. */
  requests?: RequestRecord[];
  /**
   * When set (with `expectedVersion > 0`), the commit also requires the stored header's `writeId`
   * to be exactly this, else VERSION_CONFLICT with nothing written. The task writer sets it on
   * every update, from a read or from its cached view (src/tasks/writer/task-cache.ts): a version alone
   * does not pin what was read, since a task deleted or expired and created again under the same
   * id climbs through the same versions; every write's writeId is unique, so it does.
   */
  expectedWriteId?: string;
  /**
   * An `Idempotency-Key` this write claims (StateStore.getIdempotencyEntry): stored with the write,
   * atomically, when no live entry is stored under its `key`; when one is, the commit fails with
   * IdempotencyKeyTakenError (carrying the stored entry) and nothing is written. The version and
   * writeId checks come first: a commit that loses its compare-and-set fails with
   * VersionConflictError whatever the key (so a commit whose answer was lost, retried as the same
   * write, is recognised by its writeId, never taken for a twin).
   */
  idempotency?: IdempotencyEntry;
  /**
   * `JSON.stringify({ ...requests[i], tenantId })` for each of `requests`, when the caller made it
   * already (the task writer does, for its cache's size accounting): a backend that stores records
   * as JSON sends these strings rather than serializing each record again.
   */
  requestJson?: readonly string[];
}

/** One event of a v3 stream as the store keeps it (its id is `{seq}-{n}`). */
export interface StreamEvent {
  n: number;
  event: string;
  data: Record<string, unknown>;
}

/** A task whose lease has lapsed, as the lease index lists it (`StateStore.listLapsedLeases`). */
export interface LeaseEntry {
  tenantId: string;
  taskId: string;
  /** When the lease lapsed: its `expiresAt` (epoch ms, the store's clock). */
  expiresAt: number;
}

/** A task committed since the archive last took it (StateStore.listUnarchived). */
export interface ArchiveEntry {
  tenantId: string;
  taskId: string;
  /** The task's version as of that commit. */
  version: number;
  /** When it was committed: epoch ms, the store's clock. */
  changedAt: number;
}

export interface Page<T> {
  items: T[];
  /** Opaque; pass back to get the next page. Absent on the last page. */
  nextCursor?: string;
}

/**
 * The state-store contract every backend implements and the shared conformance suite
 * (`test/conformance/`) checks, the in-memory one included.
 *
 * Tenant isolation: every method takes the tenant id and every key a backend builds includes it,
 * so data of another tenant does not exist for the caller (reads return undefined, never another
 * tenant's record). Owner checks within a tenant belong to the services.
 *
 * Errors: a lost compare-and-set is a `VersionConflictError` with nothing written; an unreachable
 * backend is a `StateStoreUnavailableError` within a bounded time; a record that cannot be parsed
 * is a `StateCorruptError`, and the record is left untouched for inspection.
 *
 * Expiry: a task whose `expiresAt` has passed reads as missing (backends may also delete it).
 */
export abstract class StateStore {
  /**
   * The largest request record (its JSON, in bytes) a new request may start with; undefined: no
   * limit. Services refuse a larger one with 413 before the model runs. It bounds admission only:
   * a commit stores a record of any size (an answer is stored whatever the model returned).
   */
  readonly maxRequestBytes?: number;

  /**
   * True when the store lives in this process, so a read costs no round trip: the task writer then
   * keeps no cache of what it wrote (src/tasks/writer/task-cache.ts), which would only double the memory.
   */
  readonly inProcess: boolean = false;

  /** The task header, or undefined when missing, expired or of another tenant. */
  abstract getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined>;

  /** Every request of a task in `seq` order (empty when the task is missing). */
  abstract listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]>;

  /** One request by id (resume and approvals address requests directly). */
  abstract getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined>;

  /**
   * An owner's tasks in one session, oldest first, paged. `includeDeleting` also lists tasks marked
   * for deletion (only the deletion of a session asks, to finish what a crash left half-deleted).
   */
  abstract listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>>;

  /**
   * Deletion (src/tasks/task-deletion.service.ts). A task is first marked by a commit that sets
   * `deletingAt`; from then on every read above hides it (as missing), while a commit still sees
   * its version, so no write can land on it. These finish the job in bounded steps.
   */
  /** The header even while it is marked `deletingAt` (undefined when missing or expired). */
  abstract getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined>;

  /**
   * One bounded, atomic step of deleting a task marked `deletingAt`: removes at most `batchSize`
   * request records with their request-id index entries; once none remain, the header, its session
   * index entry and, when the session is left empty, the owner's session entry. True when no task
   * marked for deletion is left under that id: it is gone (now, or before), or the id holds a task
   * that is not marked (never marked, or created again once the deletion was done), which is left
   * alone — also when another process finished the deletion and the id was created again between
   * this step's read of the marked header and its writes (test/backends/deletion-race.e2e-spec.ts).
   */
  abstract deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean>;

  /**
   * The ids of the sessions an owner has tasks in (of any agent), paged in a stable order. A
   * session emptied since (its tasks expired or deleted) may still be listed: callers skip it.
   */
  abstract listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>>;

  /**
   * The stream log (docs/api.md, Streaming): the events of a task's latest streamed request, so a
   * client reattaching on another replica gets exactly what it missed. Optional capability: the
   * defaults here store nothing and read `undefined` (unsupported), and callers then fall back to
   * the request's outcome.
   *
   * - A task keeps the events of one request: appending events of a higher `seq` drops those of a
   *   lower one; events of a lower `seq` than the one held are ignored (a late writer).
   * - Within a request, events are kept in `n` order and an event whose `n` is not above the last
   *   stored one is ignored, so a retried append stores nothing twice.
   * - Appending to a task that is missing, expired or marked for deletion stores nothing; so does
   *   appending for a `seq` the task holds no request of (`seq >= requestCount`), or, when
   *   `requestId` is given (the request runner always gives it), for a request the task does not
   *   hold: a writer of an earlier task of the id, late after its deletion, must neither hold the
   *   new task's log back nor add its events to it (test/backends/deletion-race.e2e-spec.ts).
   * - The log expires with its task (the task's `expiresAt`) and is removed by its deletion.
   * - Bounds (bytes and count) are the writer's (src/tasks/events/stream-event-writer.service.ts); a backend may
   *   split a batch to fit its item limits.
   */
  async appendStreamEvents(_tenantId: string, _taskId: string, _seq: number, _events: StreamEvent[], _requestId?: string): Promise<void> {}

  /** Request `seq`'s stored events with `n > after`, in order; [] when none (or the task is missing); undefined when unsupported. */
  async readStreamEvents(_tenantId: string, _taskId: string, _seq: number, _after: number): Promise<StreamEvent[] | undefined> {
    return undefined;
  }

  /**
   * The lease index (src/tasks/run/lease-sweeper.service.ts): the tasks due for a look at or before
   * `before` (epoch ms, the store's clock), of every tenant, the earliest first, paged. This is how
   * a replica finds the requests of a process that died, and the webhook deliveries nobody sent
   * (src/tasks/webhooks/), without anyone touching their tasks.
   *
   * - A task is due at `wakeAt(task)` (state-store.util.ts): its lease's `expiresAt`, a pause's
   *   `pauseExpiresAt` or its outbox's first `dueAt`, whichever comes first (a dead delivery at
   *   DEAD_DELIVERY_AT); `expiresAt` of an entry is that time.
   * - The index follows the header in the same atomic commit: a commit lists the task at the
   *   header's `wakeAt`, one whose header has none (no lease and no delivery: released, paused,
   *   marked for deletion: src/tasks/lifecycle/) unlists it, and a commit that fails changes nothing.
   * - A task that is missing or expired is never listed (an entry an expired task left behind is
   *   dropped when a listing meets it).
   * - The cursor is a position in the index: it stays valid for a later call with a later `before`.
   * - Tenant isolation: this is the one read across tenants. An entry names only a tenant and a
   *   task id; whoever acts on it reads the task under that tenant, like any other call.
   * - Cost is proportional to the entries read (the page, plus dead entries dropped on the way),
   *   never to the number of tasks.
   */
  abstract listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>>;

  /**
   * The archive index (docs/design/audit-archive.md, "How events reach the archive", point 3): the
   * tasks committed since the audit archive last took them, changed at or before `before` (epoch
   * ms, the store's clock), of every tenant, the oldest change first, paged. This is how the
   * archive's catch-up finds what a killed replica or an archive outage left behind.
   *
   * - Kept only by a store built with the option `archiveIndex: true` (the app sets it when an
   *   archive is configured). Without it a commit writes nothing more than it otherwise would, this
   *   lists nothing (`{ items: [] }`) and `markArchived` does nothing.
   * - The index follows the header in the same atomic commit, adding no round trip: every commit
   *   that applies (a create, an update, the mark of a deletion) lists the task with its new version
   *   at the store's time of the commit (a task already listed moves to that version and time); a
   *   commit that fails changes nothing.
   * - A task marked for deletion (`deletingAt`) is listed (the archive takes it before it goes); the
   *   last step of its deletion (`deleteTaskBatch`) unlists it with the header. A task that is
   *   missing or expired is never listed (an entry an expired task left behind is dropped when a
   *   listing meets it).
   * - `changedAt` is the store's clock: the server's own where the commit runs on it (Redis,
   *   PostgreSQL), else the committing process's reading of it (`now()`), never earlier than that
   *   process's previous one; commits of two processes within `clockSkewMs` of each other may be
   *   listed in either order.
   * - The cursor is a position in the index: it stays valid for a later call with a later `before`.
   * - Tenant isolation: a read across tenants, as `listLapsedLeases` is. An entry names only a
   *   tenant, a task id and a version; whoever acts on it reads the task under that tenant.
   * - Cost is proportional to the entries read (the page, plus dead entries dropped on the way),
   *   never to the number of tasks.
   */
  abstract listUnarchived(before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>>;

  /**
   * Unlists tasks the archive has taken (see `listUnarchived`): per entry, a compare-and-set on the
   * version, so the task is unlisted only if its listed version is at or below the one given; an
   * entry a later commit listed stays. One round trip for the batch (callers pass at most 100
   * entries; DynamoDB reads the headers first, once, for entries the store neither listed nor
   * committed itself); entries of tasks that are not listed are skipped. Does nothing without
   * `archiveIndex`. The version alone pins the entry: a task deleted or expired and created again
   * climbs from version 1 again, so a late mark of the earlier task's version can unlist the new
   * one (until its next commit lists it again).
   */
  abstract markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void>;

  /**
   * The store's clock (docs/api.md, "Leases and clocks"): its current time in epoch ms as this
   * process best knows it, with no round trip of its own. Leases (`expiresAt` written and judged)
   * and task expiry go by it, so replicas whose clocks disagree agree on when a lease lapses. The
   * default is this process's clock (the in-memory store lives in it); a shared backend estimates
   * its server's clock from the times its answers carry (src/state/store-clock.ts).
   */
  now(): number {
    return Date.now();
  }

  /**
   * How far two replicas' readings of `now()` may disagree (ms): every lease is written this much
   * longer, so no replica judges a live lease lapsed early. 0 for a clock read exactly.
   */
  readonly clockSkewMs: number = 0;

  /**
   * Idempotency keys (docs/api.md, "Retries with Idempotency-Key"): the entry stored under `key`
   * by a commit that claimed it (TaskWrite.idempotency), or undefined when none is or it has
   * expired (its `expiresAt`, the store's clock, has passed).
   *
   * - Stored per tenant, apart from the task: deleting or expiring the task leaves the entry, and the
   *   entry's expiry does not touch the task.
   * - An expired entry reads as missing, and a commit may claim its key again (replacing it);
   *   backends remove expired entries on their own (Redis and DynamoDB by their TTL, PostgreSQL and
   *   memory by their sweeps), so they hold at most what the last `TA_IDEMPOTENCY_TTL_SECONDS` wrote.
   */
  abstract getIdempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined>;

  /** Applies one TaskWrite atomically; returns the task as stored (with its new version). */
  abstract commit(tenantId: string, write: TaskWrite): Promise<TaskRecord>;

  /** Resolves when the backend answers (readiness). */
  abstract ping(): Promise<void>;

  /** Releases connections. */
  abstract close(): Promise<void>;
}
