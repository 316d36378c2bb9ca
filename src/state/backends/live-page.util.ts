import { Page } from '../state-store';

/** One entry of an ordered index: its position (the cursor after it) and the live record, if any. */
export interface IndexEntry<T> {
  position: string;
  /** Undefined when the entry is dead (its task expired, or was re-created elsewhere). */
  item: T | undefined;
}

/** Reads up to `count` entries strictly after `after` (from the start when undefined). */
export type IndexReader<T> = (after: string | undefined, count: number) => Promise<{ entries: IndexEntry<T>[]; more: boolean }>;

/**
 * Pages an ordered index whose entries may be dead. It reads on until it holds one live item more
 * than the page, so `nextCursor` is present exactly when another live item follows (a page is never
 * short because of dead entries, and the last page never points at an empty one). The cursor is the
 * base64url of the backend's position, opaque to callers; a forged one can only move within the
 * index the backend already scoped to the tenant and owner.
 */
export async function pageLiveEntries<T>(page: { limit: number; cursor?: string }, read: IndexReader<T>): Promise<Page<T>> {
  const limit = Math.max(1, Math.floor(page.limit));
  let after = page.cursor ? Buffer.from(page.cursor, 'base64url').toString() : undefined;
  const live: { position: string; item: T }[] = [];
  for (;;) {
    const { entries, more } = await read(after, limit + 1 - live.length);
    for (const e of entries) if (e.item !== undefined) live.push({ position: e.position, item: e.item });
    if (live.length > limit || !more || entries.length === 0) break;
    after = entries[entries.length - 1].position;
  }
  const items = live.slice(0, limit);
  if (live.length <= limit) return { items: items.map((x) => x.item) };
  return { items: items.map((x) => x.item), nextCursor: Buffer.from(items[limit - 1].position).toString('base64url') };
}
