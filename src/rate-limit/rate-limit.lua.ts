/**
 * One admission, atomically, on the Redis clock (`TIME`, the same for every replica): the GCRA of
 * gcra.ts for the request windows and the token window, and a sorted set of held slots (score: the
 * slot's expiry) for concurrency. Every limit is checked first; only when all admit are they
 * written, so a refused request counts nowhere.
 *
 * KEYS: caller-rpm, agent-rpm, caller-concurrency, caller-tpm (a limit of 0 skips its key)
 * ARGV: periodMs, callerRpm, agentRpm, concurrency, tpm, slot, slotTtlMs, epsilonMs
 * Reply: { refused (0 none, else 1..4 in KEYS order), retryAfterMs,
 *          then per limit remaining, resetMs (in KEYS order) }
 */
export const RATE_LIMIT_ADMIT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local period = tonumber(ARGV[1])
local eps = tonumber(ARGV[8])
local refused, retry = 0, 0
local out = {}
local writes = {}

local function tat_of(key)
  local v = tonumber(redis.call('GET', key))
  if (not v) or v < now then return now end
  return v
end
local function refuse(i, wait)
  if refused == 0 then refused = i; retry = wait end
end

for i = 1, 2 do
  local limit = tonumber(ARGV[i + 1])
  if limit > 0 then
    local e = period / limit
    local base = tat_of(KEYS[i])
    local nxt = base + e
    if nxt - now > period + eps then
      refuse(i, nxt - period - now)
      out[2 * i - 1] = math.max(0, math.floor((period - (base - now) + eps) / e)); out[2 * i] = nxt - period - now
    else
      writes[#writes + 1] = { KEYS[i], nxt }
      out[2 * i - 1] = math.max(0, math.floor((period - (nxt - now) + eps) / e)); out[2 * i] = nxt - now
    end
  else
    out[2 * i - 1] = 0; out[2 * i] = 0
  end
end

local conc = tonumber(ARGV[4])
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local held = redis.call('ZCARD', KEYS[3])
  if held >= conc then
    refuse(3, 1000)
    out[5] = 0
  else
    out[5] = conc - held - 1
  end
  out[6] = 0
else
  out[5] = 0; out[6] = 0
end

local tpm = tonumber(ARGV[5])
if tpm > 0 then
  local e = period / tpm
  local base = tat_of(KEYS[4])
  if base - now >= period then
    refuse(4, base - period - now + 1)
    out[7] = 0
  else
    out[7] = math.max(0, math.floor((period - (base - now) + eps) / e))
  end
  out[8] = base - now
else
  out[7] = 0; out[8] = 0
end

if refused == 0 then
  for _, w in ipairs(writes) do
    redis.call('SET', w[1], string.format('%.3f', w[2]), 'PX', math.ceil(w[2] - now) + 1)
  end
  if conc > 0 then
    local ttl = tonumber(ARGV[7])
    redis.call('ZADD', KEYS[3], now + ttl, ARGV[6])
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
end

local reply = { refused, math.ceil(retry) }
for i = 1, 8 do reply[#reply + 1] = math.ceil(out[i]) end
return reply
`;

/** Adds tokens to a token window. KEYS: caller-tpm. ARGV: periodMs, limit, tokens. */
export const RATE_LIMIT_CHARGE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = tonumber(redis.call('GET', KEYS[1]))
if (not v) or v < now then v = now end
local nxt = v + tonumber(ARGV[3]) * tonumber(ARGV[1]) / tonumber(ARGV[2])
redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1)
return 1
`;

/** A concurrency slot: ARGV[1] 'release' removes it; 'refresh' moves its expiry to now + ARGV[3] ms. KEYS: the set. ARGV[2]: the slot. */
export const RATE_LIMIT_SLOT_LUA = `
if ARGV[1] == 'release' then
  return redis.call('ZREM', KEYS[1], ARGV[2])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`;
