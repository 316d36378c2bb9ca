/**
 * One read of the archive index (StateStore.listUnarchived; the key in redis-keys.ts): up to
 * `count` entries scored at or below `upTo`, strictly after the position (score, member) given, in
 * the index's order (score, then member). Each comes back as member, score and the task's version
 * (the header's `v`: every commit that lists a task moves its entry, so that is the version it was
 * listed at), or -1 when the task is dead; an entry whose header is gone (Redis expired it) or has
 * expired is removed in the same script, so a removal can never undo a commit that listed the task
 * again. Returns the flat triples and 1 when more entries may follow (else 0).
 *
 * KEYS: 1 the archive index.
 * ARGV: 1 upTo (a score: microseconds), 2 count, 3 the position's score (or '' from the start),
 *       4 its member, 5 now (ms, the store's clock).
 *
 * Members are header keys of any tenant, not declared (a single Redis node: see redis-keys.ts). A
 * header key holding another type is listed at version 0: reading the task then reports it corrupt.
 */
export const ARCHIVE_LIST_LUA = `
local index, upTo, count, now = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5])
local afterScore, afterMember = ARGV[3], ARGV[4]
local candidates = {}
local rest
if afterScore == '' then
  rest = redis.call('ZRANGEBYSCORE', index, '-inf', upTo, 'WITHSCORES', 'LIMIT', 0, count)
else
  -- The position's own score, after its member (scores are microseconds of distinct commits: a handful at most).
  if tonumber(afterScore) <= tonumber(upTo) then
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', index, afterScore, afterScore)) do
      if member > afterMember then table.insert(candidates, { member, afterScore }) end
    end
  end
  rest = redis.call('ZRANGEBYSCORE', index, '(' .. afterScore, upTo, 'WITHSCORES', 'LIMIT', 0, count)
end
for i = 1, #rest, 2 do table.insert(candidates, { rest[i], rest[i + 1] }) end

local out = {}
for i = 1, math.min(count, #candidates) do
  local member, score = candidates[i][1], candidates[i][2]
  local version = 0
  local kind = redis.call('TYPE', member).ok
  if kind == 'none' then
    version = -1
  elseif kind == 'hash' then
    local cur = redis.call('HMGET', member, 'v', 'exp')
    local exp = tonumber(cur[2] or '')
    if not cur[1] or (exp and exp <= now) then version = -1 else version = tonumber(cur[1]) or 0 end
  end
  if version == -1 then redis.call('ZREM', index, member) end
  table.insert(out, member)
  table.insert(out, score)
  table.insert(out, version)
end
local more = 0
if #candidates > count or #rest == count * 2 then more = 1 end
return { out, more }
`;

/**
 * markArchived on the archive index: per (member, version) pair, the entry is removed when the
 * task's header is gone or its version (the listed one: see above) is at or below the version
 * given; an entry a later commit listed stays. Returns how many entries were removed.
 *
 * KEYS: 1 the archive index.
 * ARGV: pairs of header key (the member) and version.
 */
export const ARCHIVE_MARK_LUA = `
local removed = 0
for i = 1, #ARGV, 2 do
  local member, given = ARGV[i], tonumber(ARGV[i + 1])
  if redis.call('ZSCORE', KEYS[1], member) then
    local kind = redis.call('TYPE', member).ok
    local v
    if kind == 'hash' then v = tonumber(redis.call('HGET', member, 'v') or '') end
    if kind == 'none' or (v and v <= given) then removed = removed + redis.call('ZREM', KEYS[1], member) end
  end
end
return removed
`;
