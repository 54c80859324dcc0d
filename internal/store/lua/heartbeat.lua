-- heartbeat.lua: registers a live worker and extends its leases in one
-- call (Store.Heartbeat). It first checks the queue's schema version
-- (writing it on a new queue), so a worker of another version refuses to
-- run. It also recovers expired leases and ages long-waiting tasks, as
-- leasing does, so crashed workers' tasks return and low levels keep aging
-- even while every worker is saturated (nobody leases then). A lease whose
-- token no longer matches is not extended and its ID is returned as lost.
-- Records of workers whose liveness expired are removed, and so are
-- completed task records whose retention ended. It adds the worker's
-- outcome counts since its previous heartbeat to the current rate bucket
-- (see counts.lua) and returns the paused levels, read with the schema
-- version in one command.
--
-- uses: fields.lua prelude.lua buckets.lua counts.lua
--
-- KEYS     (newScriptKeys in declare.go; the script builds the same names
--          from P) alive (ZSET), v, paused, cnt (STRINGs; cnt a schema 1
--          key, read), leases, running, scheduled, dead, done (ZSETs),
--          busy, cap, n (HASHes), p:0..p:<max level> (LISTs), then s:<id>
--          of each lease to extend, then
--          absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  worker ID
-- ARGV[3]  now in ms, or "" for Redis's clock
-- ARGV[4]  schema version
-- ARGV[5]  the options, a JSON object (heartbeatArgs in heartbeat.go); a
--          field left out takes the value in brackets:
--            ttl     ms: the worker counts as alive until now + ttl
--            cap     its capacity
--            lease   lease duration in ms
--            age     age after ms (Config.AgeAfter) [0: no aging]
--            top     the queue's top level
--            ret     retention in ms (Config.Retention) of the tasks
--                    recovery ends canceled [0]
--            counts  outcome counts since the previous heartbeat, an
--                    object: "<level>" or "P<pool>" -> [processed, failed,
--                    preempted, SLA breaches] (see counts.lua) [none]
--            pools   the slot pools as the cap field stores them,
--                    "<pool>:<size>:<l>,<l>:<borrow 0/1>[:<name>]/..."
--                    (encodePools in heartbeat.go) [none]
-- ARGV[6..] the leases to extend: id, token, id, token, ...
--
-- The cap field of the worker is written as "<capacity>@<now ms>", then
-- "@<slot pools>" when it has pools (fleet.lua and workers.lua read it).
--
-- Reply: {lost IDs, corruption messages, paused levels (the paused key's
-- value, "" for none), the IDs among the extended leases whose cancel was
-- requested (F_CANCEL, see cancel.lua)}; an error reply SCHEMA ... for another schema
-- version, CORRUPT ... when a shared key holds another type.
--
-- Keys it touches: those declared in KEYS, and keys it finds as it runs
-- (safe because absent is declared): t:<id>, s:<id>, c:<id> of the leases
-- it recovers, the tasks it ages and the done records it expires, the
-- rate bucket r:<bucket> of Redis's clock (HASH); the channel wake.

local w, now, schema = ARGV[2], clock(ARGV[3]), ARGV[4]
local opt = cjson.decode(ARGV[5])
local age_after, top = opt.age or 0, opt.top
local vp = redis.call('MGET', P .. 'v', P .. 'paused')
local v, paused = vp[1], vp[2] or ''
if not v then
  if redis.call('EXISTS', P .. 'cnt') == 1 then v = '1' else redis.call('SET', P .. 'v', schema); v = schema end
end
if v ~= schema then
  return redis.error_reply('SCHEMA the queue holds data of schema version ' .. v .. '; this worker reads version ' .. schema)
end
-- Reads first: each also checks its key's type before anything is written.
local bad = {}
local _, exp, e = due_reads(now, bad)
if e then return redis.error_reply(e) end
local ok1, dead = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'alive', '-inf', '(' .. now, 'LIMIT', 0, 20)
if not ok1 then return redis.error_reply('CORRUPT ' .. P .. 'alive is a ' .. typeof(P .. 'alive') .. ', want a zset') end
local ok2, done = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'done', '-inf', now, 'LIMIT', 0, 100)
if not ok2 then return redis.error_reply('CORRUPT ' .. P .. 'done is a ' .. typeof(P .. 'done') .. ', want a zset') end
-- The worker's own leases are read here and extended before recovery
-- runs, so that a lease that expired while this worker could not reach it
-- (the slot migrating, say) stays its own.
local lost, ext, mine, cancels = {}, {}, {}, {}
if #ARGV >= 6 then
  local sk = {}
  for i = 6, #ARGV, 2 do sk[#sk + 1] = skey(ARGV[i]) end
  local raws = redis.call('MGET', unpack(sk))
  local dl = now + opt.lease
  for i = 6, #ARGV, 2 do
    local s = decode(raws[(i - 4) / 2])
    if s and s[F_TOKEN] == ARGV[i + 1] then
      ext[#ext + 1] = dl; ext[#ext + 1] = ARGV[i]; mine[ARGV[i]] = true
      if s[F_CANCEL] then cancels[#cancels + 1] = ARGV[i] end
    else
      lost[#lost + 1] = ARGV[i]
    end
  end
end
if next(mine) then
  local left = {}
  for _, id in ipairs(exp) do if not mine[id] then left[#left + 1] = id end end
  exp = left
end
local sweep = #exp > 0 or age_after > 0
if sweep then
  local g = shared()
  if g then return redis.error_reply(g) end
end
-- The first write: a wrong-typed cap fails it, and nothing has changed.
local capv = opt.cap .. '@' .. now
if opt.pools and opt.pools ~= '' then capv = capv .. '@' .. opt.pools end
if not pcall(redis.call, 'HSET', P .. 'cap', w, capv) then
  return redis.error_reply('CORRUPT ' .. P .. 'cap is a ' .. typeof(P .. 'cap') .. ', want a hash')
end
-- due_reads checked the type of leases.
if #ext > 0 then redis.call('ZADD', P .. 'leases', 'XX', unpack(ext)) end
if sweep then
  recover(exp, now, bad, opt.ret)
  age(now, age_after, top, bad)
end
redis.call('ZADD', P .. 'alive', now + opt.ttl, w)
for _, o in ipairs(dead) do
  redis.call('ZREM', P .. 'alive', o)
  redis.call('HDEL', P .. 'cap', o)
  local ok3, busy = pcall(redis.call, 'HGET', P .. 'busy', o)
  if ok3 and num(busy) <= 0 then redis.call('HDEL', P .. 'busy', o) end
end
for _, o in ipairs(done) do
  redis.call('DEL', tkey(o), skey(o), ckey(o))
  redis.call('ZREM', P .. 'done', o)
end
add_counts(now, opt.counts, bad)
return {lost, bad, paused, cancels}
