import { ArchiveEntry, LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state.entities';
import { IdempotencyKeyTakenError, VersionConflictError } from '../../state.errors';
import { frozenCopy, frozenOwn, isExpired, isHidden, pageOf, sealedFor, wakeAt } from '../../state-store.util';

interface TenantData {
  tasks: Map<string, TaskRecord>;
  requests: Map<string, RequestRecord[]>;
  requestIndex: Map<string, { taskId: string; seq: number }>;
  /** `${ownerId}\u0000${sessionId}` → task ids in creation order */
  sessions: Map<string, string[]>;
  /**
   * Task id → the lease the task holds (the lease index, set by each commit). Per tenant and by
   * the task's own id: a key made per commit (`${tenantId}\u0000${taskId}`) was a new string to
   * join and hash twice a turn, the store's costliest lines (issue 27).
   */
  leases: Map<string, LeaseEntry>;
}

export interface MemoryStateStoreOptions {
  /** How often the sweep of expired tasks runs, in ms (default 1000); 0: never on its own (tests call sweep()). */
  sweepIntervalMs?: number;
  /** Records (task headers and requests) one sweep examines or removes at most (default 2000). */
  sweepSliceSize?: number;
  /** Keep the archive index (StateStore.listUnarchived; default false: commits list nothing). */
  archiveIndex?: boolean;
}

/** Documented in docs/configuration.md (TA_TASK_TTL_SECONDS). */
const SWEEP_INTERVAL_MS = 1000;
const SWEEP_SLICE_SIZE = 2000;

/**
 * The reference backend (the default): plain maps per tenant. A commit checks and writes in one
 * synchronous step, so it is atomic with respect to every other call in the process. Records are
 * copied once on the way in and deep-frozen, so no caller can change stored state by mutating an
 * object, and reads hand out the frozen records without copying (a follow-on on a long task reads
 * every request: copying them all on each read made it O(history) in allocations).
 *
 * Expired tasks are removed with everything of theirs (requests, request-id index entries, session
 * and owner-session entries, stream log): at once when a read or a commit meets one, and otherwise
 * by a sweep that walks the tasks in bounded slices on an unref'd timer, so memory comes back
 * without a request and no tick holds the event loop for long.
 *
 * One file on purpose, as the reference to read the contract against: every concern works on the
 * same private maps (src/state/backends/README.md says which method fills which room).
 */
export class MemoryStateStore extends StateStore {
  override readonly inProcess: boolean = true;
  private readonly tenants = new Map<string, TenantData>();
  /** `${tenantId}\u0000${taskId}` → the stream log of the task's latest streamed request. */
  private readonly streams = new Map<string, { seq: number; events: StreamEvent[] }>();
  /**
   * `${tenantId}\u0000${taskId}` → the task's archive entry and its place in the index (a counter):
   * each commit moves the task to the end, so the map's order is the order of changes.
   */
  private readonly archive = new Map<string, { entry: ArchiveEntry; at: number }>();
  private readonly archiveIndex: boolean;
  /**
   * `${tenantId}\u0000${key}` → a claimed Idempotency-Key, in the order of claiming: all share one
   * TTL (TA_IDEMPOTENCY_TTL_SECONDS), so the expired ones are at the front, where the sweep takes them.
   */
  private readonly idempotency = new Map<string, IdempotencyEntry>();
  private archiveCount = 0;
  private lastChangedAt = 0;
  private readonly sweepIntervalMs: number;
  private readonly sweepSliceSize: number;
  private sweepTimer?: NodeJS.Timeout;
  /** Where the sweep goes on from (see walk()). */
  private sweepCursor?: Iterator<[string, TenantData, TaskRecord]>;

  constructor(options: MemoryStateStoreOptions = {}) {
    super();
    this.sweepIntervalMs = options.sweepIntervalMs ?? SWEEP_INTERVAL_MS;
    this.sweepSliceSize = Math.max(1, options.sweepSliceSize ?? SWEEP_SLICE_SIZE);
    this.archiveIndex = options.archiveIndex ?? false;
  }

  private tenant(tenantId: string): TenantData {
    let t = this.tenants.get(tenantId);
    if (!t) {
      t = { tasks: new Map(), requests: new Map(), requestIndex: new Map(), sessions: new Map(), leases: new Map() };
      this.tenants.set(tenantId, t);
    }
    return t;
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    const task = this.liveTask(tenantId, taskId);
    return task && task.deletingAt === undefined ? task : undefined;
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.liveTask(tenantId, taskId);
  }

  /** The stored task unless it has expired; an expired one is removed on the spot. */
  private liveTask(tenantId: string, taskId: string): TaskRecord | undefined {
    const t = this.tenants.get(tenantId);
    const task = t?.tasks.get(taskId);
    if (!t || !task) return undefined;
    if (!isExpired(task)) return task;
    this.purge(tenantId, t, task);
    return undefined;
  }

  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    const t = this.tenants.get(tenantId);
    const task = t?.tasks.get(taskId);
    if (!t || !task) return true;
    if (task.deletingAt === undefined) return true;
    const requests = t.requests.get(taskId) ?? [];
    // From the end, so the array stays dense (request seqs run from 0).
    for (let n = 0; n < batchSize && requests.length; n++) {
      const r = requests.pop();
      if (r && t.requestIndex.get(r.requestId)?.taskId === taskId) t.requestIndex.delete(r.requestId);
    }
    if (requests.length) return false;
    this.dropTask(tenantId, t, task);
    return true;
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    const prefix = `${ownerId}\u0000`;
    const ids = [...(this.tenants.get(tenantId)?.sessions.keys() ?? [])].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
    return pageOf(ids, page);
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    if (!(await this.getTask(tenantId, taskId))) return [];
    return [...(this.tenants.get(tenantId)?.requests.get(taskId) ?? [])];
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    const t = this.tenants.get(tenantId);
    const ref = t?.requestIndex.get(requestId);
    if (!t || !ref || !(await this.getTask(tenantId, ref.taskId))) return undefined;
    const r = t.requests.get(ref.taskId)?.[ref.seq];
    // The seq may since hold another request (the task id was re-created after expiring).
    return r && r.requestId === requestId ? r : undefined;
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    const t = this.tenants.get(tenantId);
    const ids = t?.sessions.get(`${ownerId}\u0000${sessionId}`) ?? [];
    // A re-created task id may now be in another owner's or session's list: only its own counts.
    const mine = (x: TaskRecord | undefined): x is TaskRecord =>
      !!x && !(page.includeDeleting ? isExpired(x) : isHidden(x)) && x.ownerId === ownerId && x.sessionId === sessionId;
    const stored = ids.map((id) => t!.tasks.get(id));
    for (const x of stored) if (x && isExpired(x)) this.purge(tenantId, t!, x);
    return pageOf(stored.filter(mine), page);
  }

  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    const t = this.tenant(tenantId);
    const { taskId } = write.task;
    const current = t.tasks.get(taskId);
    const live = current && !isExpired(current) ? current : undefined;
    const actual = live?.version ?? 0;
    if (actual !== write.expectedVersion || (write.expectedWriteId !== undefined && live?.writeId !== write.expectedWriteId)) {
      throw new VersionConflictError(taskId, write.expectedVersion, actual);
    }
    const claim = write.idempotency && `${tenantId}\u0000${write.idempotency.key}`;
    if (claim) {
      const held = this.liveEntry(claim);
      if (held) throw new IdempotencyKeyTakenError(held);
      this.idempotency.set(claim, frozenCopy(write.idempotency!));
      this.startSweep();
    }

    const stored: TaskRecord = frozenOwn({ ...write.task, tenantId, version: write.expectedVersion + 1 });
    if (!live) {
      // A create (or re-create over an expired task, removed first): start from a clean slate.
      if (current) this.purge(tenantId, t, current);
      this.startSweep();
      t.requests.set(taskId, []);
      this.streams.delete(`${tenantId}\u0000${taskId}`);
      const key = `${stored.ownerId}\u0000${stored.sessionId}`;
      const list = t.sessions.get(key) ?? [];
      if (!list.includes(taskId)) list.push(taskId);
      t.sessions.set(key, list);
    }
    const requests = t.requests.get(taskId)!;
    for (const r of write.requests ?? []) {
      // A record already frozen and stamped (the task writer seals what it writes) is kept as it is.
      requests[r.seq] = sealedFor(r, tenantId);
      t.requestIndex.set(r.requestId, { taskId, seq: r.seq });
    }
    t.tasks.set(taskId, stored);
    const wake = wakeAt(stored);
    if (wake !== undefined) t.leases.set(taskId, { tenantId, taskId, expiresAt: wake });
    else t.leases.delete(taskId);
    if (this.archiveIndex) {
      const indexKey = `${tenantId}\u0000${taskId}`;
      // Never earlier than the entry before it, so the map's order is also the order of changedAt.
      this.lastChangedAt = Math.max(this.now(), this.lastChangedAt);
      this.archive.delete(indexKey);
      this.archive.set(indexKey, { entry: { tenantId, taskId, version: stored.version, changedAt: this.lastChangedAt }, at: ++this.archiveCount });
    }
    return stored;
  }

  /**
   * The held leases are few (one per running request), so a listing sorts those lapsed by
   * `before`; a task met expired is removed on the spot, its entry with it.
   */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    const after = page.cursor ? (JSON.parse(Buffer.from(page.cursor, 'base64url').toString()) as LeaseEntry) : undefined;
    const lapsed = [...this.tenants.values()]
      .flatMap((t) => [...t.leases.values()])
      .filter((e) => e.expiresAt <= before && (!after || leaseOrder(e, after) > 0))
      .filter((e) => this.liveTask(e.tenantId, e.taskId) !== undefined)
      .sort(leaseOrder);
    const items = lapsed.slice(0, Math.max(1, Math.floor(page.limit)));
    const last = items.at(-1);
    return lapsed.length > items.length && last ? { items, nextCursor: Buffer.from(JSON.stringify(last)).toString('base64url') } : { items };
  }

  /**
   * The archive index in the order of changes (see `archive`): a listing walks it from the start,
   * skipping the entries up to the cursor's place (those not yet marked archived), and stops at the
   * first entry changed after `before`; a task met expired is removed on the spot, its entry with it.
   */
  async listUnarchived(before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
    const after = page.cursor ? Number(Buffer.from(page.cursor, 'base64url').toString()) || 0 : 0;
    const limit = Math.max(1, Math.floor(page.limit));
    const items: { entry: ArchiveEntry; at: number }[] = [];
    for (const listed of this.archive.values()) {
      if (listed.entry.changedAt > before) break;
      if (listed.at <= after || !this.liveTask(listed.entry.tenantId, listed.entry.taskId)) continue;
      if (items.length === limit) return { items: items.map((x) => x.entry), nextCursor: Buffer.from(String(items[limit - 1].at)).toString('base64url') };
      items.push(listed);
    }
    return { items: items.map((x) => x.entry) };
  }

  async markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
    for (const e of entries) {
      const key = `${e.tenantId}\u0000${e.taskId}`;
      if ((this.archive.get(key)?.entry.version ?? Infinity) <= e.version) this.archive.delete(key);
    }
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    const task = await this.getTask(tenantId, taskId);
    // Not a request of this task: a writer of an earlier task of the id (StateStore.appendStreamEvents).
    if (!task || seq >= task.requestCount) return;
    if (requestId !== undefined && this.tenants.get(tenantId)?.requests.get(taskId)?.[seq]?.requestId !== requestId) return;
    const key = `${tenantId}\u0000${taskId}`;
    let log = this.streams.get(key);
    if (log && log.seq > seq) return;
    if (!log || log.seq < seq) this.streams.set(key, (log = { seq, events: [] }));
    for (const e of events) if (e.n > (log.events.at(-1)?.n ?? -1)) log.events.push(frozenOwn({ n: e.n, event: e.event, data: e.data }));
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    if (!(await this.getTask(tenantId, taskId))) return [];
    const log = this.streams.get(`${tenantId}\u0000${taskId}`);
    return log?.seq === seq ? log.events.filter((e) => e.n > after) : [];
  }

  async getIdempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
    return this.liveEntry(`${tenantId}\u0000${key}`);
  }

  /** The entry under `at` unless it has expired; an expired one is removed on the spot (a claim again goes to the end). */
  private liveEntry(at: string): IdempotencyEntry | undefined {
    const entry = this.idempotency.get(at);
    if (!entry || entry.expiresAt > this.now()) return entry;
    this.idempotency.delete(at);
    return undefined;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /**
   * One slice of the sweep: goes on from where the last slice stopped, examines at most
   * `sweepSliceSize` records (a task header counts one, each request of a removed task one more)
   * and removes the expired tasks among them. A slice that reaches the end of the tasks stops
   * there; the next starts a new pass. Returns how many tasks it removed.
   */
  sweep(now = this.now()): number {
    let budget = this.sweepSliceSize;
    let removed = 0;
    // Expired Idempotency-Keys first: oldest claims first, so this stops at the first live one.
    for (const [at, entry] of this.idempotency) {
      if (entry.expiresAt > now || budget <= 0) break;
      this.idempotency.delete(at);
      budget--;
    }
    this.sweepCursor ??= this.walk();
    while (budget > 0) {
      const next = this.sweepCursor.next();
      if (next.done) {
        this.sweepCursor = undefined;
        break;
      }
      const [tenantId, t, task] = next.value;
      budget -= 1;
      if (!isExpired(task, now)) continue;
      budget -= this.purge(tenantId, t, task);
      removed++;
    }
    return removed;
  }

  /**
   * How many records the store holds for a tenant: tasks, requests, request-id index entries,
   * session lists, stream logs, archive entries and Idempotency-Keys. For tests, to show that removed means gone.
   */
  storedCount(tenantId: string): number {
    const t = this.tenants.get(tenantId);
    const prefix = `${tenantId}\u0000`;
    const streams = [...this.streams.keys(), ...this.archive.keys(), ...this.idempotency.keys()].filter((k) => k.startsWith(prefix)).length;
    if (!t) return streams;
    const requests = [...t.requests.values()].reduce((n, list) => n + list.filter(Boolean).length, 0);
    return t.tasks.size + requests + t.requestIndex.size + t.sessions.size + streams;
  }

  /** Every stored task, tenant by tenant, in one pass; a tenant left with no task is dropped as the pass leaves it. */
  private *walk(): Generator<[string, TenantData, TaskRecord]> {
    // Map iterators stay valid across deletions and see entries added meanwhile, so the pass can
    // pause between slices while requests change the maps.
    for (const [tenantId, t] of this.tenants) {
      for (const task of t.tasks.values()) yield [tenantId, t, task];
      if (!t.tasks.size) this.tenants.delete(tenantId);
    }
  }

  /** On the first task: a timer that does not keep the process alive (close() stops it). */
  private startSweep(): void {
    if (this.sweepTimer || this.sweepIntervalMs <= 0) return;
    this.sweepTimer = setInterval(() => this.sweep(), this.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /** Removes a task (expired) with all of it at once; returns how many requests went with it. */
  private purge(tenantId: string, t: TenantData, task: TaskRecord): number {
    const requests = t.requests.get(task.taskId) ?? [];
    for (const r of requests) if (r && t.requestIndex.get(r.requestId)?.taskId === task.taskId) t.requestIndex.delete(r.requestId);
    this.dropTask(tenantId, t, task);
    return requests.length;
  }

  /** The header, its requests list, stream log and session entry (the owner's session goes with its last task). */
  private dropTask(tenantId: string, t: TenantData, task: TaskRecord): void {
    const { taskId } = task;
    t.requests.delete(taskId);
    t.tasks.delete(taskId);
    this.streams.delete(`${tenantId}\u0000${taskId}`);
    t.leases.delete(taskId);
    this.archive.delete(`${tenantId}\u0000${taskId}`);
    const key = `${task.ownerId}\u0000${task.sessionId}`;
    const left = (t.sessions.get(key) ?? []).filter((id) => id !== taskId);
    if (left.length) t.sessions.set(key, left);
    else t.sessions.delete(key);
  }
}

/** The index's order: by lapse, then tenant and task id. */
function leaseOrder(a: LeaseEntry, b: LeaseEntry): number {
  return (
    a.expiresAt - b.expiresAt || (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0) || (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0)
  );
}
