-- dead_admin.lua: takes a dead-lettered task out of the dead set
-- (Store.RequeueDead, DeleteDead): back to the tail of its level (requeue)
-- or gone (delete). It is fenced by the task's state: only a task in state
-- dead that is in the dead set is touched, so it cannot race a worker or a
-- second admin.
--
-- uses: prelude.lua
--
-- KEYS     the task's s:<id>, t:<id>, c:<id>, x:<id>, xs:<id> (STRINGs),
--          dead (ZSET), n (HASH), p:0..p:<max level> (LISTs), then with
--          ARGV[7] "1" the uniqueness lock u:<digest> (STRING) its record
--          names, then absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  id
-- ARGV[3]  now in ms, or "" for Redis's clock
-- ARGV[4]  mode: requeue | delete
-- ARGV[5]  the number of levels
-- ARGV[6]  "1" to drop the checkpoint (requeue)
-- ARGV[7]  "1" when the key before absent is the task's uniqueness lock:
--          delete releases it while it names the task (as asynq does: the
--          task is gone, an equal one may come); requeue keeps it
--
-- Reply: {1, level} on success, {0} when there is no record (a stale dead
-- entry is removed), {-1, state} when the task is not dead, {-2, level}
-- when the record's level is unusable (requeue only; delete it instead).
--
-- Keys it touches: those declared in KEYS (it builds the same names from
-- P); the channel wake.

local id, now, mode, levels = ARGV[2], clock(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local indead = redis.call('ZSCORE', P .. 'dead', id)
local s, e = sget(id)
if not s then return redis.error_reply(e) end
if not next(s) and redis.call('EXISTS', tkey(id)) == 0 then
  if indead then redis.call('ZREM', P .. 'dead', id) end
  return {0}
end
if s.st ~= 'dead' or not indead then return {-1, s.st or 'pending'} end
local g = guard('n', 'hash', 'dead', 'zset')
if g then return redis.error_reply(g) end
local raw = level_of(s, hdr_of(id))
-- to_dead counted the task under its level, or '0' without one.
local counted = raw or '0'
local lvl = tonumber(raw or '')
if mode == 'requeue' then
  if not lvl or lvl ~= math.floor(lvl) or lvl < 0 or lvl >= levels or redis.call('EXISTS', tkey(id)) == 0 then
    return {-2, raw or ''}
  end
  g = guard('p:' .. lvl, 'list')
  if g then return redis.error_reply(g) end
end
redis.call('ZREM', P .. 'dead', id)
if tonumber(redis.call('HINCRBY', P .. 'n', 'd' .. counted, -1)) < 0 then
  redis.call('HSET', P .. 'n', 'd' .. counted, 0)
end
if mode == 'delete' then
  redis.call('DEL', tkey(id), skey(id), ckey(id), P .. 'x:' .. id, P .. 'xs:' .. id)
  local lock = KEYS[#KEYS - 1]
  if ARGV[7] == '1' and redis.call('GET', lock) == id then redis.call('DEL', lock) end
  return {1, counted}
end
s.att, s.fin = nil, nil
if ARGV[6] == '1' then redis.call('DEL', ckey(id)) end
push_pending(id, s, lvl, now, false)
return {1, lvl}
