/**
 * The commit: one Lua script, so the version check and every write happen atomically on the server
 * (no WATCH/MULTI round trips, and two processes cannot interleave). It returns
 * `{'ok', seconds, microseconds}` (the server's `TIME`, which keeps the caller's estimate of the
 * store's clock fresh at no extra round trip; see store-clock.ts), `{'conflict', actualVersion}`,
 * `{'corrupt', key}` or `{'taken', entryJSON}` (the live entry holding the claimed Idempotency-Key),
 * and in the last three cases has written nothing.
 *
 * KEYS: 1 task header, 2 requests hash, 3 request-ids set, 4 session zset, 5 the lease index, 6 the
 *       archive index (redis-keys.ts), 7 the Idempotency-Key entry the commit claims (without a
 *       claim the header again: a declared key of the slot, left alone), 8.. one request-index key
 *       per request written (same order as the ARGV groups).
 * ARGV: 1 expected version, 2 now (ms), 3 expiresAt (ms or ''), 4 header JSON (already carrying the
 *       new version), 5 task id (session member), 6 request-index key prefix, 7 candidate TTL horizon
 *       (ms or ''; see ttl-horizon.util.ts), 8 the owner's sessions zset, 9 session id (its member),
 *       10 the header's writeId to require (TaskWrite.expectedWriteId, or ''), 11 the new header's
 *       writeId (kept in field `w` for the next such check, or ''), 12 the lease's expiresAt (ms, or
 *       '' when the header holds no lease), 13 '1' to list the task in the archive index (the store's
 *       archiveIndex option) or '', 14 the claimed entry's JSON (TaskWrite.idempotency) or '' when
 *       the commit claims none, 15 its expiresAt (whole ms, or ''), then per request: seq, encoded
 *       request id, record JSON, request-index JSON.
 *
 * Keys not declared in KEYS (old request-index keys, dropped or re-expired) share the tenant's hash
 * tag, so they live in the same cluster slot as the declared ones.
 */
export const COMMIT_LUA = `
local expected = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local exp, json, taskId, indexPrefix, candidate = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]

-- A key of the wrong type would make a write fail halfway through the script (Redis does not roll
-- back), so refuse before writing anything.
-- (The archive index and the entry only when this commit writes them: without the option, or a
-- claim, they cost nothing.)
local kinds = { 'hash', 'hash', 'set', 'zset', 'zset', 'zset', 'string' }
for i = 1, #KEYS do
  if (i ~= 6 or ARGV[13] ~= '') and (i ~= 7 or ARGV[14] ~= '') then
    local t = redis.call('TYPE', KEYS[i]).ok
    if t ~= 'none' and t ~= (kinds[i] or 'string') then return { 'corrupt', KEYS[i] } end
  end
end

local cur = redis.call('HMGET', KEYS[1], 'v', 'exp', 'ttl', 'w')
local actual, live = 0, false
if cur[1] then
  local v = tonumber(cur[1])
  if not v then return { 'corrupt', KEYS[1] } end
  local e = tonumber(cur[2] or '')
  -- An expired task not yet evicted counts as missing, as it does for readers.
  if not e or e > now then actual, live = v, true end
end
if actual ~= expected then return { 'conflict', actual } end
if ARGV[10] ~= '' and cur[4] ~= ARGV[10] then return { 'conflict', actual } end

-- The claim, only once the compare-and-set has held (a lost one is a conflict whatever the key
-- holds). A live entry refuses it; an expired one (Redis's clock may lag ours) is replaced. Its own
-- expiry removes the entry, whatever becomes of the task.
if ARGV[14] ~= '' then
  local held = redis.call('GET', KEYS[7])
  if held then
    local ok, entry = pcall(cjson.decode, held)
    if not ok or type(entry) ~= 'table' or type(entry.expiresAt) ~= 'number' then return { 'corrupt', KEYS[7] } end
    if entry.expiresAt > now then return { 'taken', held } end
  end
  redis.call('SET', KEYS[7], ARGV[14], 'PXAT', ARGV[15])
end

local oldHorizon = (live and cur[3]) or ''
local horizon = ''
if exp ~= '' then
  if oldHorizon ~= '' and tonumber(exp) <= tonumber(oldHorizon) then horizon = oldHorizon else horizon = candidate end
end

local sessionIsNew = false
if not live then
  -- Create, or re-create over an expired task: start from a clean slate.
  for _, rid in ipairs(redis.call('SMEMBERS', KEYS[3])) do redis.call('DEL', indexPrefix .. rid) end
  redis.call('DEL', KEYS[2], KEYS[3])
  sessionIsNew = redis.call('EXISTS', KEYS[4]) == 0
  local top = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  local score = 1
  if top[2] then score = tonumber(top[2]) + 1 end
  redis.call('ZADD', KEYS[4], score, taskId)
  redis.call('ZADD', ARGV[8], 0, ARGV[9])
end

redis.call('HSET', KEYS[1], 'v', expected + 1, 'exp', exp, 'ttl', horizon, 'w', ARGV[11], 'data', json)
-- The lease index follows the header: listed at the lease's expiry while it holds one.
if ARGV[12] == '' then redis.call('ZREM', KEYS[5], KEYS[1]) else redis.call('ZADD', KEYS[5], ARGV[12], KEYS[1]) end
local time = redis.call('TIME')
-- So does the archive index, when kept: listed at the server's time of this commit, in microseconds
-- (built as a string: Lua would print so large a number in exponent form, losing digits).
if ARGV[13] ~= '' then redis.call('ZADD', KEYS[6], time[1] .. string.format('%06d', tonumber(time[2])), KEYS[1]) end
for i = 1, #KEYS - 7 do
  local a = 15 + (i - 1) * 4
  redis.call('HSET', KEYS[2], ARGV[a + 1], ARGV[a + 3])
  redis.call('SADD', KEYS[3], ARGV[a + 2])
  redis.call('SET', KEYS[7 + i], ARGV[a + 4])
end

local function expire(key)
  if horizon == '' then redis.call('PERSIST', key) else redis.call('PEXPIREAT', key, horizon) end
end
-- The task's own keys are O(1); a new index key lost its TTL to SET. Only when the horizon moves
-- (rarely) are all of the task's request-index keys re-expired.
for i = 8, #KEYS do expire(KEYS[i]) end
if horizon ~= oldHorizon or not live then
  for _, rid in ipairs(redis.call('SMEMBERS', KEYS[3])) do expire(indexPrefix .. rid) end
end
expire(KEYS[1]); expire(KEYS[2]); expire(KEYS[3])

-- The session index lives as long as its longest-lived task (and forever once one never expires).
if horizon == '' then
  redis.call('PERSIST', KEYS[4])
else
  local t = redis.call('PEXPIRETIME', KEYS[4])
  if (t == -1 and sessionIsNew) or (t >= 0 and t < tonumber(horizon)) then redis.call('PEXPIREAT', KEYS[4], horizon) end
end
return { 'ok', time[1], time[2] }
`;
