/**
 * One read of the lease index (StateStore.listLapsedLeases; the key in redis-keys.ts): up to
 * `count` entries scored at or below `before`, strictly after the position (score, member) given,
 * in the index's order (score, then member). Each comes back as member, score and whether its task
 * is alive; an entry whose header is gone (Redis expired it) or has expired is removed in the same
 * script, so a removal can never undo a commit that listed the task again. Returns the flat
 * triples and 1 when more entries may follow (else 0).
 *
 * KEYS: 1 the lease index.
 * ARGV: 1 before (ms), 2 count, 3 the position's score (or '' from the start), 4 its member,
 *       5 now (ms, the store's clock).
 *
 * Members are header keys of any tenant, not declared (a single Redis node: see redis-keys.ts). A
 * header key holding another type is listed as alive: reading the task then reports it corrupt.
 */
export const LEASES_LUA = `
local index, before, count, now = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5])
local afterScore, afterMember = ARGV[3], ARGV[4]
local candidates = {}
local rest
if afterScore == '' then
  rest = redis.call('ZRANGEBYSCORE', index, '-inf', before, 'WITHSCORES', 'LIMIT', 0, count)
else
  -- The position's own score, after its member (leases lapse at distinct instants: a handful at most).
  if tonumber(afterScore) <= tonumber(before) then
    for _, member in ipairs(redis.call('ZRANGEBYSCORE', index, afterScore, afterScore)) do
      if member > afterMember then table.insert(candidates, { member, afterScore }) end
    end
  end
  rest = redis.call('ZRANGEBYSCORE', index, '(' .. afterScore, before, 'WITHSCORES', 'LIMIT', 0, count)
end
for i = 1, #rest, 2 do table.insert(candidates, { rest[i], rest[i + 1] }) end

local out = {}
for i = 1, math.min(count, #candidates) do
  local member, score = candidates[i][1], candidates[i][2]
  local alive = 1
  local kind = redis.call('TYPE', member).ok
  if kind == 'none' then
    alive = 0
  elseif kind == 'hash' then
    local exp = redis.call('HGET', member, 'exp')
    if exp and exp ~= '' and tonumber(exp) <= now then alive = 0 end
  end
  if alive == 0 then redis.call('ZREM', index, member) end
  table.insert(out, member)
  table.insert(out, score)
  table.insert(out, alive)
end
local more = 0
if #candidates > count or #rest == count * 2 then more = 1 end
return { out, more }
`;
