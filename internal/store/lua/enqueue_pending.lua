-- enqueue_pending.lua: stores a chunk of new pending tasks in one call,
-- the common case of Enqueue's grouped calls and of EnqueueBatch: every
-- task pending (none scheduled), none unique, every ID made by the client
-- (no res:<id> to clear). enqueue_batch.lua takes any other chunk. The
-- tasks come grouped by level, so that a level's IDs are one range of
-- ARGV: a call costs TIME, one MSETNX of every record, one RPUSH a level
-- and, for a level whose list was empty, PUBLISH. Its ARGV are three a
-- task where enqueue_batch.lua's are eight, and its Lua builds one table.
-- It stands alone (no prelude).
--
-- KEYS[1..G] the pending lists p:<level> of the G levels the chunk holds
--          (LISTs), in the order ARGV lists the levels
-- KEYS[G+1..] each task's record t:<id> (STRING), the tasks grouped by
--          level in that order
-- ARGV[1]  the key prefix (for the channel wake)
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3]  G, the number of levels
-- ARGV[4..] G levels, then how many tasks each has, then the n IDs, then
--          the n records' heads "2|<level>|<preemptible>", then the n
--          bodies (as enqueue.lua's ARGV[8]), each in the order of KEYS
--
-- Reply: n when every task was stored (the common case), else one entry
-- per task in the order of KEYS: 1 stored, 0 the ID exists, or a CORRUPT
-- message (nothing of that task stored). enqueueReplies reads either.
--
-- Keys it touches. Declared in KEYS: p:<level>, t:<id>. Not a key: the
-- channel wake.

local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local mid = '|' .. now .. '|'
local G = tonumber(ARGV[3])
local n = #KEYS - G
local ids = 4 + 2 * G -- ARGV[ids + i - 1] is task i's ID
local heads = ids + n
local bodies = heads + n
local kv = {}
for i = 1, n do
  kv[2 * i - 1] = KEYS[G + i]
  kv[2 * i] = ARGV[heads + i - 1] .. mid .. ARGV[bodies + i - 1]
end
-- res stays nil while every task is stored. If one ID exists (a made ID
-- met, or a key planted), MSETNX stores none, and each goes alone.
local res
if redis.call('MSETNX', unpack(kv)) ~= 1 then
  res = {}
  for i = 1, n do res[i] = redis.call('SET', kv[2 * i - 1], kv[2 * i], 'NX') and 1 or 0 end
end
-- stored returns the IDs of the tasks first..last that were stored, by
-- the reply r, when not all were.
local function stored(r, first, last)
  local list = {}
  for i = first, last do
    if r[i] == 1 then list[#list + 1] = ARGV[ids + i - 1] end
  end
  return list
end
-- refuse refuses the tasks first..last still stored, whose level's list
-- KEYS[g] is wrong-typed: their records go again, and their entries of
-- the reply r (made, all 1s, when nil) name the list. It returns r.
-- (The functions take the reply, not an upvalue: miniredis's Lua lost
-- what the script assigned to one.)
local function refuse(r, g, first, last)
  local t = redis.call('TYPE', KEYS[g])
  local msg = 'CORRUPT ' .. KEYS[g] .. ' is a ' .. (t.ok or tostring(t)) .. ', want a list'
  if not r then
    r = {}
    for i = 1, n do r[i] = 1 end
  end
  for i = first, last do
    if r[i] == 1 then
      redis.call('DEL', KEYS[G + i])
      r[i] = msg
    end
  end
  return r
end
-- push queues the tasks first..last of level g, or, when not all were
-- stored, list, the IDs of those that were, with one RPUSH (pcall's
-- result).
local function push(g, first, last, list)
  if not list then
    return pcall(redis.call, 'RPUSH', KEYS[g], unpack(ARGV, ids + first - 1, ids + last - 1))
  end
  if #list == 0 then return true, 0 end
  return pcall(redis.call, 'RPUSH', KEYS[g], unpack(list))
end
-- Each level's stored tasks go in one RPUSH, and a level whose list was
-- empty is announced (else an earlier announcement is unanswered).
local first = 1 -- the level's first task
for g = 1, G do
  local last = first + tonumber(ARGV[3 + G + g]) - 1
  local list = res and stored(res, first, last)
  local want = list and #list or last - first + 1
  local ok, len = push(g, first, last, list)
  if not ok then
    res = refuse(res, g, first, last)
  elseif want > 0 and len == want then
    redis.call('PUBLISH', ARGV[1] .. 'wake', ARGV[3 + g])
  end
  first = last + 1
end
return res or n
