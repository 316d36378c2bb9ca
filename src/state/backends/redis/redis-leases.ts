import { LeaseEntry, Page } from '../../state-store';
import { pageLiveEntries } from '../live-page.util';
import { RedisContext } from './redis-context';
import { LEASES_LUA } from './redis-leases.lua';
import { RedisScript } from './redis-wire';
import { leaseIndexKey, parseTaskKey } from './redis-keys';

/** The lease index's entries (redis-leases.lua.ts), paged by their (score, member) position. */
export async function readLapsedLeases(ctx: RedisContext, before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
  const key = leaseIndexKey(ctx.prefix);
  return ctx.run(key, () =>
    pageLiveEntries(page, async (after, count) => {
      const [score, member] = after === undefined ? ['', ''] : splitPosition(after);
      const [flat, more] = (await ctx.redis.runScript(LEASES, 1, key, before, count, score, member, ctx.now())) as [(string | number)[], number];
      const entries = [];
      for (let i = 0; i < flat.length; i += 3) {
        const [m, s, alive] = [String(flat[i]), String(flat[i + 1]), flat[i + 2] === 1];
        const ids = parseTaskKey(ctx.prefix, m);
        entries.push({ position: `${s}\u0000${m}`, item: alive && ids ? { ...ids, expiresAt: Number(s) } : undefined });
      }
      return { entries, more: more === 1 };
    }),
  );
}

/** A lease index position (`{score}\0{member}`) as the script's two arguments. */
function splitPosition(position: string): [string, string] {
  const at = position.indexOf('\u0000');
  return at < 0 ? ['', ''] : [position.slice(0, at), position.slice(at + 1)];
}

const LEASES = new RedisScript(LEASES_LUA);
