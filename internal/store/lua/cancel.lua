-- cancel.lua: cancels a task by its ID (Store.Cancel). A pending,
-- scheduled or retrying task leaves its list or set and ends canceled at
-- once (to_canceled in prelude.lua). A running one is marked: its state
-- gets F_CANCEL (the durable request, set once) and the message 'x'<id>
-- goes out on the channel wake, so that its holder cancels the run's
-- context at once; the holder's next heartbeat finds the mark too (see
-- heartbeat.lua). However that lease ends (finish.lua, acks.lua,
-- recover in prelude.lua) the task then ends canceled, unless its handler
-- succeeded. A task canceled already is left as it is.
--
-- uses: fields.lua prelude.lua
--
-- KEYS     the task's s:<id>, t:<id>, c:<id> (STRINGs), scheduled, done
--          (ZSETs), n (HASH), feed (STREAM), p:0..p:<max level> (LISTs)
--          (newScriptKeys in declare.go; the script builds the same names
--          from P), then, when its record names one, the task's
--          uniqueness lock u:<digest> (STRING), then
--          absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  id
-- ARGV[3]  now in ms, or "" for Redis's clock
-- ARGV[4]  retention in ms (Config.Retention): how long a canceled task
--          is kept in done
--
-- Reply: {1, state} when the task was pending, scheduled or retry and is
-- now canceled; {2} when it runs and its cancel is requested; {3} when it
-- was canceled already; {0} when there is no such task; {-1, state} when
-- it finished (done or dead): nothing changed. An error reply (CORRUPT
-- ...) when a key it writes holds another type: nothing changed.
--
-- Keys it touches: those declared in KEYS; the channel wake.

local WAKE_CANCEL = 'x' -- a wake message 'x'<id>: cancel the run of task id
local id, now, ret = ARGV[2], clock(ARGV[3]), tonumber(ARGV[4])
local s, e = sget(id)
if not s then return redis.error_reply(e) end
if not next(s) and redis.call('EXISTS', tkey(id)) == 0 then return {0} end
local st = s[F_STATE] or 'pending'
if st == 'canceled' then return {3} end
if st == 'done' or st == 'dead' then return {-1, st} end
if st == 'active' then
  if not s[F_CANCEL] then
    s[F_CANCEL] = tostring(now)
    sput(id, s)
  end
  redis.call('PUBLISH', P .. 'wake', WAKE_CANCEL .. id)
  return {2}
end
local lvl = level_of(s, hdr_of(id)) or '0'
local g = guard('n', 'hash', 'done', 'zset', 'scheduled', 'zset')
if not g and st == 'pending' then g = guard('p:' .. lvl, 'list') end
if g then return redis.error_reply(g) end
if st == 'pending' then
  redis.call('LREM', P .. 'p:' .. lvl, 0, id)
else -- scheduled or retry
  if redis.call('ZREM', P .. 'scheduled', id) == 1 then
    redis.call('HINCRBY', P .. 'n', C_SCHEDULED .. (s[F_SCHEDULED_LEVEL] or lvl), -1)
  end
end
to_canceled(id, s, lvl, now, ret, nil)
return {1, st}
