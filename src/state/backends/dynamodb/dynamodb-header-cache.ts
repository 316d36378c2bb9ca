import { TaskRecord } from '../../state.entities';
import { Splits } from './dynamodb-parts';

/**
 * The header state a commit builds on and its condition pins: as the commit read it (consistent
 * read), or as this process last wrote or read it (HeaderCache, below).
 */
export interface HeaderSnapshot {
  version: number;
  inc: string;
  expiresAtMs?: number;
  childTtl?: number;
  sessionPk: string;
  sessionSk: string;
  /** The writeId of the write that stored it (TaskRecord.writeId), if it had one. */
  writeId?: string;
  /** Its requests stored in parts; undefined for a header written before headers recorded them. */
  splits?: Splits;
  /** The sort key of its lease entry (dynamodb-leases.ts) while it holds a lease. */
  leaseSk?: string;
  /** The sort key of its archive entry (dynamodb-archive.ts), once a commit of a store keeping the index wrote one. */
  archiveSk?: string;
}

/** The snapshot of a header item, given its parsed record. */
export function snapshotOf(item: Record<string, unknown>, task: TaskRecord): HeaderSnapshot {
  const legacy = item.splits === undefined;
  return {
    version: Number(item.version),
    inc: String(item.inc),
    expiresAtMs: item.expiresAtMs === undefined ? undefined : Number(item.expiresAtMs),
    childTtl: item.childTtl === undefined ? undefined : Number(item.childTtl),
    sessionPk: String(item.sessionPk),
    sessionSk: String(item.sessionSk),
    // An older header kept its writeId only inside `data`.
    writeId: legacy ? task.writeId : typeof item.writeId === 'string' ? item.writeId : undefined,
    splits: legacy ? undefined : (item.splits as Splits),
    leaseSk: typeof item.leaseSk === 'string' ? item.leaseSk : undefined,
    archiveSk: typeof item.archiveSk === 'string' ? item.archiveSk : undefined,
  };
}

export function isLive(header: HeaderSnapshot | undefined, now: number): header is HeaderSnapshot {
  return header !== undefined && (header.expiresAtMs === undefined || header.expiresAtMs > now);
}

/** Task headers a store remembers at most (least recently used first out): about 0.5 KB each. */
export const DEFAULT_HEADER_CACHE_SIZE = 10_000;

/**
 * The header of each task as this process last wrote or read it, so a commit expecting exactly
 * that version builds its transaction without reading the header first (dynamodb-commit.ts). Only
 * a hint: the transaction's condition pins the version and the incarnation, so a stale entry costs
 * a VERSION_CONFLICT (the failure returns the header, which replaces the entry), never a wrong write.
 */
export class HeaderCache {
  private readonly entries = new Map<string, HeaderSnapshot>();

  constructor(private readonly capacity = DEFAULT_HEADER_CACHE_SIZE) {}

  get(pk: string): HeaderSnapshot | undefined {
    const snapshot = this.entries.get(pk);
    if (snapshot) {
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(pk);
      this.entries.set(pk, snapshot);
    }
    return snapshot;
  }

  /**
   * Remembers what was written or read. A read that began before this process's own later write
   * returns an older version of the same incarnation: the newer entry is kept.
   */
  remember(pk: string, snapshot: HeaderSnapshot, read = false): void {
    if (this.capacity <= 0) return;
    const known = this.entries.get(pk);
    if (read && known && known.inc === snapshot.inc && known.version > snapshot.version) return;
    this.entries.delete(pk);
    this.entries.set(pk, snapshot);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(pk: string): void {
    this.entries.delete(pk);
  }
}
