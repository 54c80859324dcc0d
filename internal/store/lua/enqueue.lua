-- enqueue.lua: stores a new task record and makes it pending or scheduled
-- (Store.Enqueue). It stands alone (no prelude to set up on every call).
-- A pending task costs TIME, SET NX, RPUSH (DEL too when its ID was the
-- caller's) and, only when its list was empty, PUBLISH. A write that fails on a wrong-typed key is undone and
-- reported as CORRUPT. A scheduled task is announced with the message "s"
-- when it is the earliest due, so that idle workers learn its due time at
-- once rather than at their next poll. Its state's fields are named by
-- fields.lua, joined in first:
-- uses: fields.lua
--
-- Two options ride in ARGV[9], a JSON object, only when set. "u", the
-- uniqueness lock's time to live in ms (the Unique option): the task is
-- refused while the lock u:<digest> of an equal task (same type and
-- payload) exists; else the script takes it (SET NX PX, its value the
-- task's ID, its time to live counted from when the task is due) with the
-- task. "k", a periodic schedule's tick in ms (the runtime's periodic
-- tasks): the task is refused unless the tick is after the schedule's last
-- tick (the key periodic:<name>), which it then becomes, whether the task
-- is stored or refused as a duplicate; so of every runtime that tries a
-- tick, exactly one decides it, and an older tick is never enqueued after
-- a newer one. The key holds "<tick ms>|<spec>", the spec ("s") of the
-- runtime that decided the tick (a value of the tick alone, as written
-- before, is read too).
--
-- A stored task whose ID was the caller's deletes res:<id>, the result an
-- earlier task with the same ID left (result.lua): it is not the new
-- task's, and once the new task completes nothing else would tell them
-- apart. One DEL, only when the record is stored and res:<id> is declared
-- (a generated ID is new: no earlier task left a result).
--
-- KEYS[1]  the task's record t:<id> (STRING)
-- KEYS[2]  its level's list p:<level> (LIST, pending) or scheduled (ZSET)
-- KEYS[3]  scheduled only: its state s:<id> (STRING, written)
-- KEYS[4]  scheduled only: the counts n (HASH)
-- KEYS[o]  o = 3 (pending) or 5 (scheduled): with "u", the lock
--          u:<digest> (STRING); then, with "k", the schedule's last tick
--          periodic:<name> (STRING, "<ms>|<spec>"); then, last, when the
--          ID was the caller's: its result res:<id> (STRING, deleted).
--          A pending task declares no s:<id> and no n: it touches
--          neither.
-- ARGV[1]  the key prefix (for the channel wake)
-- ARGV[2]  id
-- ARGV[3]  "p" pending | "s" scheduled
-- ARGV[4]  now in ms, or "" for Redis's clock
-- ARGV[5]  delay in ms (scheduled)
-- ARGV[6]  level
-- ARGV[7]  preemptible: "0" or "1"
-- ARGV[8]  the record's body, after the header the script writes (see
--          encodeBody in record.go)
-- ARGV[9]  optional: {"u": lock ttl ms (a number), "k": tick ms (a
--          string), "s": the schedule's spec (with "k")}, "u", "k" or both
--
-- Reply: 1, or 0 when the ID exists, 2 when an equal task holds the
-- uniqueness lock, 3 when the tick is not after the schedule's last; an
-- error reply (CORRUPT ...) when a key holds another type.
--
-- Keys it touches. Declared in KEYS: t:<id>, p:<level> or scheduled,
-- s:<id> and n (scheduled), res:<id>, u:<digest>, periodic:<name>. Not a
-- key: the channel wake.

local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
local opt = ARGV[9] and ARGV[9] ~= '' and cjson.decode(ARGV[9]) or nil
-- lock and tickKey are the keys of the options set, nil for the others.
-- (One local a line: miniredis's Lua mixes up locals assigned together.)
local scheduled = ARGV[3] ~= 'p'
local o = scheduled and 5 or 3 -- the first key after the task's own
local lock = opt and opt.u and KEYS[o]
local tick = opt and opt.k
local tickKey = tick and KEYS[lock and o + 1 or o]
local resKey = KEYS[o + (lock and 1 or 0) + (tick and 1 or 0)] -- nil: a generated ID
if tick then
  local ok, last = pcall(redis.call, 'GET', tickKey)
  if not ok then return redis.error_reply('CORRUPT ' .. tickKey .. ' is not a string') end
  last = last and tonumber(string.match(last, '^%d+'))
  if last and last >= tonumber(tick) then return 3 end
end
-- decided records the tick (if any) as decided and returns r.
local function decided(r)
  if tick then redis.call('SET', tickKey, tick .. '|' .. (opt.s or '')) end
  return r
end
local P, id, lvl = ARGV[1], ARGV[2], ARGV[6]
if scheduled then
  for _, kt in ipairs({{KEYS[2], 'zset'}, {KEYS[4], 'hash'}}) do
    local t = redis.call('TYPE', kt[1])
    t = t.ok or t
    if t ~= 'none' and t ~= kt[2] then return redis.error_reply('CORRUPT ' .. kt[1] .. ' is a ' .. t .. ', want a ' .. kt[2]) end
  end
end
local delay = scheduled and tonumber(ARGV[5]) or 0
if lock then
  if redis.call('EXISTS', KEYS[1]) == 1 then return decided(0) end
  if not redis.call('SET', lock, id, 'NX', 'PX', delay + tonumber(opt.u)) then return decided(2) end
end
if not redis.call('SET', KEYS[1], '2|' .. lvl .. '|' .. ARGV[7] .. '|' .. now .. '|' .. ARGV[8], 'NX') then return decided(0) end
if not scheduled then
  local n = redis.pcall('RPUSH', KEYS[2], id)
  if type(n) == 'table' then
    redis.call('DEL', KEYS[1])
    if lock then redis.call('DEL', lock) end
    local t = redis.call('TYPE', KEYS[2])
    return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' is a ' .. (t.ok or tostring(t)) .. ', want a list')
  end
  if resKey then redis.call('DEL', resKey) end
  if n == 1 then redis.call('PUBLISH', P .. 'wake', lvl) end
  return decided(1)
end
local due = now + delay
redis.call('SET', KEYS[3], cjson.encode({[F_STATE] = 'scheduled', [F_PROCESS_AT] = tostring(due),
  [F_SCHEDULED_LEVEL] = lvl, [F_LEVEL] = lvl}))
redis.call('ZADD', KEYS[2], due, id)
redis.call('HINCRBY', KEYS[4], C_SCHEDULED .. lvl, 1)
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if first[1] == id then redis.call('PUBLISH', P .. 'wake', 's') end
if resKey then redis.call('DEL', resKey) end
return decided(1)
