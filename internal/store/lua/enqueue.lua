-- enqueue.lua: stores a new task record and makes it pending or scheduled
-- (Store.Enqueue). It stands alone (no prelude to set up on every call).
-- A pending task costs TIME, SET NX, RPUSH and, only when its list was
-- empty, PUBLISH. A write that fails on a wrong-typed key is undone and
-- reported as CORRUPT. A scheduled task is announced with the message "s"
-- when it is the earliest due, so that idle workers learn its due time at
-- once rather than at their next poll.
--
-- KEYS[1]  the task's record t:<id> (STRING)
-- KEYS[2]  its level's list p:<level> (LIST, pending) or scheduled (ZSET)
-- ARGV[1]  the key prefix
-- ARGV[2]  id
-- ARGV[3]  "p" pending | "s" scheduled
-- ARGV[4]  now in ms, or "" for Redis's clock
-- ARGV[5]  delay in ms (scheduled)
-- ARGV[6]  level
-- ARGV[7]  preemptible: "0" or "1"
-- ARGV[8]  the record's body, after the header the script writes (see
--          encodeBody in record.go)
--
-- Reply: 1, or 0 when the ID exists; an error reply (CORRUPT ...) when a
-- key holds another type.
--
-- Keys it touches. Declared in KEYS: t:<id>, p:<level> or scheduled.
-- Built from the prefix (not declared): s:<id> (STRING, scheduled), n
-- (HASH, scheduled), the channel wake.

local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
if ARGV[3] == 'p' then
  if not redis.call('SET', KEYS[1], '2|' .. ARGV[6] .. '|' .. ARGV[7] .. '|' .. now .. '|' .. ARGV[8], 'NX') then return 0 end
  local n = redis.pcall('RPUSH', KEYS[2], ARGV[2])
  if type(n) == 'table' then
    redis.call('DEL', KEYS[1])
    local t = redis.call('TYPE', KEYS[2])
    return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' is a ' .. (t.ok or tostring(t)) .. ', want a list')
  end
  if n == 1 then redis.call('PUBLISH', ARGV[1] .. 'wake', ARGV[6]) end
  return 1
end
local P, id, lvl = ARGV[1], ARGV[2], ARGV[6]
for _, kt in ipairs({{KEYS[2], 'zset'}, {P .. 'n', 'hash'}}) do
  local t = redis.call('TYPE', kt[1])
  t = t.ok or t
  if t ~= 'none' and t ~= kt[2] then return redis.error_reply('CORRUPT ' .. kt[1] .. ' is a ' .. t .. ', want a ' .. kt[2]) end
end
if not redis.call('SET', KEYS[1], '2|' .. lvl .. '|' .. ARGV[7] .. '|' .. now .. '|' .. ARGV[8], 'NX') then return 0 end
local due = now + tonumber(ARGV[5])
redis.call('SET', P .. 's:' .. id, cjson.encode({st = 'scheduled', pat = tostring(due), sl = lvl, l = lvl}))
redis.call('ZADD', KEYS[2], due, id)
redis.call('HINCRBY', P .. 'n', 's' .. lvl, 1)
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if first[1] == id then redis.call('PUBLISH', P .. 'wake', 's') end
return 1
