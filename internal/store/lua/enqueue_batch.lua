-- enqueue_batch.lua: stores a chunk of new tasks in one call
-- (Store.EnqueueBatch): one TIME, one MSETNX of every record (or, when an
-- ID exists, one SET NX per task) and one RPUSH per level, so a batch
-- costs a few Redis commands and one script run per chunk. It stands alone
-- (no prelude).
--
-- KEYS[1]  leases (ZSET, not touched); it routes the call to the queue's
--          slot.
-- ARGV[1]  the key prefix
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3..] per task, six arguments: id, "p" | "s", delay ms, level,
--          preemptible "0" | "1", body (as enqueue.lua's ARGV[8])
--
-- Reply: n when every task was stored (the common case), else one entry
-- per task: 1 stored, 0 the ID exists, or a CORRUPT message (nothing of
-- that task stored). enqueueReplies (enqueue_batch.go) reads either.
--
-- Keys it touches. Declared in KEYS: none it reads or writes. Built from
-- the prefix (not declared): t:<id>, s:<id> (STRINGs), p:<level> (LISTs),
-- scheduled (ZSET), n (HASH), the channel wake.

local P = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local nows = tostring(now) -- once, not per task
local function wrong(k, want)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok end
  if t ~= 'none' and t ~= want then return 'CORRUPT ' .. k .. ' is a ' .. t .. ', want a ' .. want end
end
local n = (#ARGV - 2) / 6
-- push queues the pending tasks (byl: level -> their IDs, in order) with
-- one RPUSH per level, announcing a level whose list was empty (else an
-- earlier announcement is still unanswered). A wrong-typed list refuses
-- the tasks it was to hold: their records go and res names the list (res,
-- all 1s, is made at the first refusal when nil).
local function push(byl, order, res)
  for _, lvl in ipairs(order) do
    local ids, key = byl[lvl], P .. 'p:' .. lvl
    local ok, len = pcall(redis.call, 'RPUSH', key, unpack(ids))
    if not ok then
      local msg = wrong(key, 'list') or ('CORRUPT ' .. key)
      if not res then res = {}; for i = 1, n do res[i] = 1 end end
      for i = 1, n do
        local b = 2 + 6 * (i - 1)
        if res[i] == 1 and ARGV[b + 2] == 'p' and ARGV[b + 4] == lvl then
          redis.call('DEL', P .. 't:' .. ARGV[b + 1])
          res[i] = msg
        end
      end
    elseif len == #ids then
      redis.call('PUBLISH', P .. 'wake', lvl)
    end
  end
  return res
end
local byl, order = {}, {}
-- All pending, IDs distinct (the common case): one MSETNX stores every
-- record, push queues them, and the reply is n (all stored), with no
-- second pass. If one ID exists it stores none, and each goes alone (SET
-- NX) below.
local kv, seen = {}, {}
for i = 1, n do
  local b = 2 + 6 * (i - 1)
  local id, lvl = ARGV[b + 1], ARGV[b + 4]
  if ARGV[b + 2] ~= 'p' or seen[id] then kv = nil; break end
  seen[id] = true
  kv[2 * i - 1] = P .. 't:' .. id
  kv[2 * i] = '2|' .. lvl .. '|' .. ARGV[b + 5] .. '|' .. nows .. '|' .. ARGV[b + 6]
  local l = byl[lvl]
  if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
  l[#l + 1] = id
end
if kv ~= nil and n > 0 and redis.call('MSETNX', unpack(kv)) == 1 then
  return push(byl, order, nil) or n
end
local res = {}
byl, order = {}, {}
for i = 1, n do
  local b = 2 + 6 * (i - 1)
  local id, mode, delay, lvl, prb, body = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local bad = mode == 's' and (wrong(P .. 'scheduled', 'zset') or wrong(P .. 'n', 'hash'))
  if bad then
    res[i] = bad
  elseif not redis.call('SET', P .. 't:' .. id, '2|' .. lvl .. '|' .. prb .. '|' .. nows .. '|' .. body, 'NX') then
    res[i] = 0
  elseif mode == 'p' then
    res[i] = 1
    local l = byl[lvl]
    if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
    l[#l + 1] = id
  else
    res[i] = 1
    local due = now + tonumber(delay)
    redis.call('SET', P .. 's:' .. id, cjson.encode({st = 'scheduled', pat = tostring(due), sl = lvl, l = lvl}))
    redis.call('ZADD', P .. 'scheduled', due, id)
    redis.call('HINCRBY', P .. 'n', 's' .. lvl, 1)
    local first = redis.call('ZRANGE', P .. 'scheduled', 0, 0)
    if first[1] == id then redis.call('PUBLISH', P .. 'wake', 's') end
  end
end
return push(byl, order, res)
