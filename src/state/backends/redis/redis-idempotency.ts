import { IdempotencyEntry } from '../../state.entities';
import { StateCorruptError } from '../../state.errors';
import { parseRecord } from '../parse-record.util';
import { RedisContext } from './redis-context';

// Idempotency-Key entries on Redis (StateStore.getIdempotencyEntry): one string key each, under the
// tenant's hash tag (redis-keys.ts), claimed by the commit script (redis-commit.lua.ts) and removed
// by Redis at the entry's expiresAt.

/** The entry stored under `key`; undefined when none is, or it has expired by the store's clock. */
export async function readIdempotencyEntry(ctx: RedisContext, tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
  const entryKey = ctx.keys(tenantId).idempotency(key);
  return ctx.run(entryKey, async () => {
    const json = await ctx.redis.get(entryKey);
    if (json === null) return undefined;
    const entry = parseEntry(entryKey, json);
    // Redis removes it by its own clock, which ours only estimates: a few ms late, it must still read as gone.
    return entry.expiresAt > ctx.now() ? entry : undefined;
  });
}

/** A stored entry (JSON) read back: one without a numeric expiresAt is corrupt, as the commit script also judges it. */
export function parseEntry(entryKey: string, json: string): IdempotencyEntry {
  const entry = parseRecord<IdempotencyEntry>(entryKey, json);
  if (typeof entry.expiresAt !== 'number') throw new StateCorruptError(entryKey);
  return entry;
}
