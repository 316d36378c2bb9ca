/**
 * Appends events to a task's stream log (StateStore.appendStreamEvents) in one Lua script, so the
 * checks and the push are atomic. The log is a list of `{"s":seq,"n":n,"e":event,"d":data}`
 * entries holding one request's events; it expires with the task's key (its `ttl` horizon).
 *
 * KEYS: 1 task header, 2 the stream list, 3 the task's request-ids set.
 * ARGV: 1 seq, 2 the writing request's id as the commit stores it in that set (encoded; '' for
 *       none), then pairs (n, entry JSON) in n order.
 *
 * Stores nothing when the header is missing or marked `deletingAt`, the task holds no request
 * `seq` or not the named request (a writer of an earlier task of the id: a create clears the set),
 * or the list holds a later request; drops the list when it holds an earlier one; skips entries
 * whose n is not above the last.
 */
export const STREAM_APPEND_LUA = `
local cur = redis.call('HMGET', KEYS[1], 'ttl', 'data')
if not cur[2] then return 0 end
local task = cjson.decode(cur[2])
if task.deletingAt then return 0 end
local seq = tonumber(ARGV[1])
if seq >= (tonumber(task.requestCount) or 0) then return 0 end
if ARGV[2] ~= '' and redis.call('SISMEMBER', KEYS[3], ARGV[2]) == 0 then return 0 end
local last = -1
local head = redis.call('LINDEX', KEYS[2], 0)
if head then
  local held = cjson.decode(head).s
  if held > seq then return 0 end
  if held < seq then redis.call('DEL', KEYS[2]) else last = cjson.decode(redis.call('LINDEX', KEYS[2], -1)).n end
end
for i = 3, #ARGV, 2 do
  local n = tonumber(ARGV[i])
  if n > last then
    redis.call('RPUSH', KEYS[2], ARGV[i + 1])
    last = n
  end
end
if cur[1] ~= '' then redis.call('PEXPIREAT', KEYS[2], cur[1]) end
return 1
`;
