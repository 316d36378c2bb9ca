import { ArchiveEntry, Page } from '../../state-store';
import { pageLiveEntries } from '../live-page.util';
import { ARCHIVE_LIST_LUA, ARCHIVE_MARK_LUA } from './redis-archive.lua';
import { RedisContext } from './redis-context';
import { RedisScript } from './redis-wire';
import { archiveIndexKey, parseTaskKey, RedisKeys } from './redis-keys';

/**
 * The archive index's entries (redis-archive.lua.ts), paged by their (score, member) position.
 * Scores are microseconds; `changedAt` is the whole millisecond, so `before` takes every entry
 * scored within its millisecond or earlier.
 */
export async function readUnarchived(ctx: RedisContext, before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
  if (!ctx.archiveIndex) return { items: [] };
  const key = archiveIndexKey(ctx.prefix);
  const upTo = Math.floor(before) * 1000 + 999;
  return ctx.run(key, () =>
    pageLiveEntries(page, async (after, count) => {
      const [score, member] = after === undefined ? ['', ''] : splitPosition(after);
      const [flat, more] = (await ctx.redis.runScript(ARCHIVE_LIST, 1, key, upTo, count, score, member, ctx.now())) as [(string | number)[], number];
      const entries = [];
      for (let i = 0; i < flat.length; i += 3) {
        const [m, s, version] = [String(flat[i]), String(flat[i + 1]), Number(flat[i + 2])];
        const ids = parseTaskKey(ctx.prefix, m);
        const item = version >= 0 && ids ? { ...ids, version, changedAt: Math.floor(Number(s) / 1000) } : undefined;
        entries.push({ position: `${s}\u0000${m}`, item });
      }
      return { entries, more: more === 1 };
    }),
  );
}

/** markArchived: one script for the batch (redis-archive.lua.ts), a compare-and-set per entry. */
export async function markArchivedEntries(ctx: RedisContext, entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
  if (!ctx.archiveIndex || !entries.length) return;
  const key = archiveIndexKey(ctx.prefix);
  const args = entries.flatMap((e) => [new RedisKeys(ctx.prefix, e.tenantId).task(e.taskId), e.version]);
  await ctx.run(key, () => ctx.redis.runScript(ARCHIVE_MARK, 1, key, ...args));
}

/** An index position (`{score}\0{member}`) as the script's two arguments. */
function splitPosition(position: string): [string, string] {
  const at = position.indexOf('\u0000');
  return at < 0 ? ['', ''] : [position.slice(0, at), position.slice(at + 1)];
}

const ARCHIVE_LIST = new RedisScript(ARCHIVE_LIST_LUA);
const ARCHIVE_MARK = new RedisScript(ARCHIVE_MARK_LUA);
