import { HeaderSnapshot } from './dynamodb-commit';

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
