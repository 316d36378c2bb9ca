/**
 * One step of deleting a task marked `deletingAt` (StateStore.deleteTaskBatch): one Lua script, so
 * each step is atomic and a crash between steps leaves a task that still reads as missing (its
 * header keeps the mark) and that the next step finishes. Returns `'gone'` (no header), `'changed'`
 * (the header is not the marked one the caller read: left alone), `'more'` or `'done'`.
 *
 * KEYS: 1 task header, 2 requests hash, 3 request-ids set, 4 session zset, 5 the owner's sessions
 *       zset, 6 the stream log, 7 the archive index (redis-keys.ts).
 * ARGV: 1 the marked header's version, 2 batch size, 3 request-index key prefix, 4 task id (session
 *       member), 5 session id (owner's sessions member), 6 the marked header's writeId (or '').
 *
 * The header is pinned by writeId as well as version: between the caller's read and this script,
 * another process may have finished the deletion and a follow-on created the id anew, whose
 * versions climb again through the marked one; that task is left alone.
 *
 * A step removes at most `batch` request-index keys and `batch` request fields (request seqs are
 * dense from 0, so the highest are removed first); once none remain, the header, the stream log,
 * the session entry and, when that leaves the session empty, the owner's entry for it, together
 * (a stream log removed later could be a new task's), and the task's archive index entry (its
 * member is the header key). Undeclared keys (the request-index ones)
 * share the tenant's hash tag, as in the commit.
 */
export const DELETE_BATCH_LUA = `
local cur = redis.call('HMGET', KEYS[1], 'v', 'w')
if not cur[1] then return 'gone' end
-- (A header from before field w existed is pinned by its version alone.)
if cur[1] ~= ARGV[1] or (cur[2] and cur[2] ~= ARGV[6]) then return 'changed' end
local batch = tonumber(ARGV[2])

for _, rid in ipairs(redis.call('SPOP', KEYS[3], batch)) do redis.call('DEL', ARGV[3] .. rid) end

local n = redis.call('HLEN', KEYS[2])
if n > 0 then
  local removed = 0
  for seq = n - 1, math.max(0, n - batch), -1 do removed = removed + redis.call('HDEL', KEYS[2], tostring(seq)) end
  if removed == 0 then
    -- Not dense (cannot happen through commits): fall back to naming the fields.
    local fields = redis.call('HKEYS', KEYS[2])
    for i = 1, math.min(batch, #fields) do redis.call('HDEL', KEYS[2], fields[i]) end
  end
end

if redis.call('SCARD', KEYS[3]) > 0 or redis.call('HLEN', KEYS[2]) > 0 then return 'more' end
redis.call('DEL', KEYS[1], KEYS[6])
redis.call('ZREM', KEYS[7], KEYS[1])
redis.call('ZREM', KEYS[4], ARGV[4])
if redis.call('ZCARD', KEYS[4]) == 0 then redis.call('ZREM', KEYS[5], ARGV[5]) end
return 'done'
`;
