-- enqueue_batch.lua: stores a chunk of new tasks in one call
-- (Store.EnqueueBatch): one TIME, one MSETNX of every record (or, when an
-- ID exists or a task is unique, one SET NX per task) and one RPUSH per
-- level, so a batch costs a few Redis commands and one script run per
-- chunk. It stands alone (no prelude). A unique task (the Unique option)
-- takes its lock as enqueue.lua does; an equal task earlier in the chunk
-- holds it too. Each stored task whose ID was the caller's deletes
-- res:<id>, the result an earlier task with the same ID left (as
-- enqueue.lua does), with one DEL of them all; a generated ID is new.
-- Its state's fields are named by fields.lua, joined in first:
-- uses: fields.lua
--
-- KEYS[1..] the pending lists p:0 .. p:<L-1> (LISTs, L = ARGV[3]), then
--          per task, in order: its record t:<id> (STRING), for a
--          scheduled task its state s:<id> (STRING), for a unique task
--          its lock u:<digest> (STRING), and when its ID was the caller's
--          its result res:<id> (STRING); then, last, only when a task is
--          scheduled: scheduled (ZSET) and the counts n (HASH). A key no
--          task of the call can touch is not declared.
-- ARGV[1]  the key prefix (for the channel wake)
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3]  L, the number of levels
-- ARGV[4..] per task, eight arguments: id, "p" | "s", delay ms, level,
--          preemptible "0" | "1", body (as enqueue.lua's ARGV[8]), the
--          uniqueness lock's time to live in ms ("0": not unique), "1"
--          when its res:<id> is declared ("0": a generated ID)
--
-- Reply: n when every task was stored (the common case), else one entry
-- per task: 1 stored, 0 the ID exists, 2 an equal task holds the
-- uniqueness lock, or a CORRUPT message (nothing of that task stored).
-- enqueueReplies (enqueue_batch.go) reads either.
--
-- Keys it touches. Declared in KEYS: p:<level>, t:<id>, s:<id>, res:<id>,
-- u:<digest>, scheduled, n. Not a key: the channel wake.

local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local nows = tostring(now) -- once, not per task
local L = tonumber(ARGV[3])
local W = 8 -- arguments per task
local n = (#ARGV - 3) / W
-- Each task's keys: rec[i], when scheduled st[i], when unique lock[i],
-- and when its ID was the caller's rs[i]; sched and cnt (scheduled and n)
-- follow them when a task is scheduled.
local rec, st, rs, lock, unique = {}, {}, {}, {}, false
local k = 1 + L
for i = 1, n do
  local b = 3 + W * (i - 1)
  rec[i], k = KEYS[k], k + 1
  if ARGV[b + 2] ~= 'p' then st[i], k = KEYS[k], k + 1 end
  if ARGV[b + 7] ~= '0' then lock[i], k, unique = KEYS[k], k + 1, true end
  if ARGV[b + 8] == '1' then rs[i], k = KEYS[k], k + 1 end
end
local sched = KEYS[k]
local cnt = KEYS[k + 1]
local function plist(lvl) return KEYS[1 + tonumber(lvl)] end
local function wrong(key, want)
  local t = redis.call('TYPE', key)
  if type(t) == 'table' then t = t.ok end
  if t ~= 'none' and t ~= want then return 'CORRUPT ' .. key .. ' is a ' .. t .. ', want a ' .. want end
end
-- push queues the pending tasks (byl: level -> their IDs, in order) with
-- one RPUSH per level, announcing a level whose list was empty (else an
-- earlier announcement is still unanswered). A wrong-typed list refuses
-- the tasks it was to hold: their records and locks go and res names the
-- list (res, all 1s, is made at the first refusal when nil).
local function push(byl, order, res)
  local refused = {} -- level -> why its tasks are refused
  for _, lvl in ipairs(order) do
    local ids, key = byl[lvl], plist(lvl)
    local ok, len = pcall(redis.call, 'RPUSH', key, unpack(ids))
    if not ok then
      refused[lvl] = wrong(key, 'list') or ('CORRUPT ' .. key)
    elseif len == #ids then
      redis.call('PUBLISH', ARGV[1] .. 'wake', lvl)
    end
  end
  if not next(refused) then return res end
  if not res then
    res = {}
    for i = 1, n do res[i] = 1 end
  end
  local gone = {} -- the refused tasks' records and locks
  for i = 1, n do
    local b = 3 + W * (i - 1)
    local msg = ARGV[b + 2] == 'p' and refused[ARGV[b + 4]]
    if res[i] == 1 and msg then
      gone[#gone + 1] = rec[i]; gone[#gone + 1] = lock[i] -- (no lock: appends nothing)
      res[i] = msg
    end
  end
  for _, key in ipairs(gone) do redis.call('DEL', key) end
  return res
end
-- clear deletes the results earlier tasks with the stored tasks' IDs
-- left (res: nil when all were stored) and returns res or n.
local function clear(res)
  local del = {}
  for i = 1, n do
    if rs[i] and (not res or res[i] == 1) then del[#del + 1] = rs[i] end
  end
  if #del > 0 then redis.call('DEL', unpack(del)) end
  return res or n
end
local byl, order = {}, {}
-- All pending, none unique, IDs distinct (the common case): one MSETNX
-- stores every record, push queues them, and the reply is n (all stored),
-- with no second pass. If one ID exists it stores none, and each goes
-- alone (SET NX) below.
local kv, seen = {}, {}
if unique then kv = nil end
for i = 1, kv and n or 0 do
  local b = 3 + W * (i - 1)
  local id, lvl = ARGV[b + 1], ARGV[b + 4]
  if ARGV[b + 2] ~= 'p' or seen[id] then kv = nil; break end
  seen[id] = true
  kv[2 * i - 1] = rec[i]
  kv[2 * i] = '2|' .. lvl .. '|' .. ARGV[b + 5] .. '|' .. nows .. '|' .. ARGV[b + 6]
  local l = byl[lvl]
  if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
  l[#l + 1] = id
end
if kv ~= nil and n > 0 and redis.call('MSETNX', unpack(kv)) == 1 then
  return clear(push(byl, order, nil))
end
local res = {}
byl, order = {}, {}
for i = 1, n do
  local b = 3 + W * (i - 1)
  local id, mode, delay, lvl, prb, body = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local bad = mode == 's' and (wrong(sched, 'zset') or wrong(cnt, 'hash'))
  local wait = mode == 's' and tonumber(delay) or 0
  if bad then
    res[i] = bad
  elseif lock[i] and redis.call('EXISTS', rec[i]) == 1 then
    res[i] = 0
  elseif lock[i] and not redis.call('SET', lock[i], id, 'NX', 'PX', wait + tonumber(ARGV[b + 7])) then
    res[i] = 2
  elseif not redis.call('SET', rec[i], '2|' .. lvl .. '|' .. prb .. '|' .. nows .. '|' .. body, 'NX') then
    res[i] = 0
  elseif mode == 'p' then
    res[i] = 1
    local l = byl[lvl]
    if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
    l[#l + 1] = id
  else
    res[i] = 1
    local due = now + wait
    redis.call('SET', st[i], cjson.encode({[F_STATE] = 'scheduled', [F_PROCESS_AT] = tostring(due),
      [F_SCHEDULED_LEVEL] = lvl, [F_LEVEL] = lvl}))
    redis.call('ZADD', sched, due, id)
    redis.call('HINCRBY', cnt, C_SCHEDULED .. lvl, 1)
    local first = redis.call('ZRANGE', sched, 0, 0)
    if first[1] == id then redis.call('PUBLISH', ARGV[1] .. 'wake', 's') end
  end
end
return clear(push(byl, order, res))
