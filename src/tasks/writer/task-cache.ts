import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { frozenCopy, sealedFor } from '../../state/state-store.util';
import { indexOfSeq, withRecords } from '../lifecycle/transition';

/** A task as this replica last wrote it: the header and every request, in `seq` order. */
export interface CachedTask {
  task: TaskRecord;
  requests: RequestRecord[];
}

export interface TaskCacheLimits {
  /** Tasks held at most. */
  maxEntries: number;
  /** Their request records' JSON, in characters, at most (0 disables the cache). */
  maxBytes: number;
  /** An entry unused this long is dropped (ms). */
  idleMs: number;
}

/** Documented in docs/configuration.md (TA_TASK_CACHE_MAX_BYTES). */
export const TASK_CACHE_DEFAULTS: TaskCacheLimits = { maxEntries: 10_000, maxBytes: 16 * 1024 * 1024, idleMs: 5 * 60_000 };
/** A task whose records exceed this share of `maxBytes` is not held (1 MiB of the default 16). */
const ENTRY_SHARE = 16;

interface Entry extends CachedTask {
  bytes: number;
  usedAt: number;
}

/**
 * The task writer's view of the tasks this replica wrote, so a turn on a shared store (Redis,
 * DynamoDB) commits without reading the task first: two store round trips per plain turn (admit,
 * finish) instead of four or more, and no re-parsing of a long conversation's history per turn.
 *
 * Never trusted on its own: a commit from a cached view is a compare-and-set on the cached
 * version and writeId (TaskWrite.expectedWriteId), so it applies only if nothing else wrote the
 * task since — then the view was exact. Anything else (a lost compare-and-set, an ambiguous
 * commit, a decision that would refuse or write nothing) drops the entry and the writer decides
 * again on a fresh read (src/tasks/writer/task-writer.service.ts).
 *
 * Bounded: at most `maxEntries` tasks and `maxBytes` of request JSON, least recently used
 * dropped first, and no task larger than a sixteenth of `maxBytes`; an entry unused for `idleMs`
 * is dropped when next met. Records are frozen as they enter (copied), so a caller cannot change
 * the view by mutating an object it holds.
 */
export class TaskCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * The key of the held task each request belongs to, by tenant, then request id: the ids as they
   * are, whose hashes V8 keeps, rather than a key joined from them per write (issue 27).
   */
  private readonly byRequest = new Map<string, Map<string, string>>();
  private bytes = 0;

  constructor(private readonly limits: TaskCacheLimits = TASK_CACHE_DEFAULTS) {}

  get enabled(): boolean {
    return this.limits.maxBytes > 0 && this.limits.maxEntries > 0;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  get(key: string): CachedTask | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = Date.now();
    if (now - entry.usedAt > this.limits.idleMs) {
      this.delete(key);
      return undefined;
    }
    entry.usedAt = now;
    // Most recently used last: Map keeps insertion order, so the first entries are the ones to drop.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  /** The key of the held task that has request `requestId` of the tenant, if any (the entry is not touched). */
  keyOfRequest(tenantId: string, requestId: string): string | undefined {
    const key = this.byRequest.get(tenantId)?.get(requestId);
    return key !== undefined && this.entries.has(key) ? key : undefined;
  }

  /**
   * The view after a commit of `task` (as stored) writing `written` on top of `base` (the complete
   * view the write was decided on: cached, read in full, or empty for a create).
   */
  remember(key: string, task: TaskRecord, base: RequestRecord[], written: RequestRecord[], writtenJson?: readonly string[]): void {
    if (!this.enabled) return;
    const held = this.entries.get(key);
    // A late answer of an older write must not replace a newer view.
    if (held && held.task.version > task.version) return;
    // The cached view's own records are frozen and kept as they are; records read from the store are copied once.
    const fromView = held !== undefined && held.requests === base;
    const requests = fromView ? base.slice() : base.map(frozenCopy);
    let bytes = fromView ? held.bytes : sizeOf(requests);
    // Sealed by the writer (stamped and frozen) they are kept as they are.
    const fresh = written.map((r) => sealedFor(r, task.tenantId));
    // Their JSON as the commit sent it (TaskWrite.requestJson) is their size: not serialized again.
    if (writtenJson) fresh.forEach((r, i) => writtenJson[i] !== undefined && sizes.set(r, writtenJson[i].length));
    /** Records the write replaced with a record of another request id (their index entries go). */
    const displaced: RequestRecord[] = [];
    for (const r of fresh) {
      const replaced = requests[indexOfSeq(requests, r.seq)];
      if (replaced?.seq !== r.seq) bytes += sizeOf([r]);
      else {
        bytes += sizeOf([r]) - sizeOf([replaced]);
        if (replaced.requestId !== r.requestId) displaced.push(replaced);
      }
    }
    withRecords(requests, fresh);
    // Built on the view held: the index already names every record it held, so only what the write
    // changed is indexed again (a turn of a long conversation costs the same as one of a short one).
    // Otherwise every record of the task is indexed afresh.
    if (fromView) this.drop(key, held, displaced);
    else this.delete(key);
    // One long or large task must not push out every other (it is read from the store instead).
    if (bytes > this.limits.maxBytes / ENTRY_SHARE) {
      if (fromView) this.unindex(task.tenantId, requests, key);
      return;
    }
    this.entries.set(key, { task: frozenCopy(task), requests, bytes, usedAt: Date.now() });
    let tenant = this.byRequest.get(task.tenantId);
    if (!tenant) this.byRequest.set(task.tenantId, (tenant = new Map()));
    for (const r of fromView ? fresh : requests) tenant.set(r.requestId, key);
    this.bytes += bytes;
    this.evict();
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.drop(key, entry, entry.requests);
  }

  /** Removes the entry, and the index entries of `records` (of its requests) that point at it. */
  private drop(key: string, entry: Entry, records: RequestRecord[]): void {
    this.entries.delete(key);
    this.unindex(entry.task.tenantId, records, key);
    this.bytes -= entry.bytes;
  }

  private unindex(tenantId: string, records: RequestRecord[], key: string): void {
    const tenant = this.byRequest.get(tenantId);
    if (!tenant) return;
    for (const r of records) if (tenant.get(r.requestId) === key) tenant.delete(r.requestId);
    if (!tenant.size) this.byRequest.delete(tenantId);
  }

  private evict(): void {
    for (const [key] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) return;
      this.delete(key);
    }
  }
}

const sizes = new WeakMap<object, number>();

/** A record's JSON length (memoized: records in the cache are frozen, so it cannot change). */
function sizeOf(records: RequestRecord[]): number {
  let total = 0;
  for (const r of records) {
    let n = sizes.get(r);
    if (n === undefined) {
      n = JSON.stringify(r).length;
      if (Object.isFrozen(r)) sizes.set(r, n);
    }
    total += n;
  }
  return total;
}
