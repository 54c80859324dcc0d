-- peek.lua: the first step of a lease on a queue of several shards
-- (Store.Lease, shards_lease.go), one call per shard whose view the worker
-- holds is not fresh: per level, how many tasks wait and how many at the
-- head ran before (view.lua). The lease takes a level's resumed heads
-- before other shards' tasks of that level. It also says when the shard
-- next needs a sweep: its earliest scheduled task or lease deadline. It
-- writes nothing.
--
-- uses: anchor.lua view.lua
--
-- KEYS     scheduled, leases (ZSETs), paused (STRING, read by
--          shard_view), p:0..p:<max level> (LISTs), then
--          absent, a key no one writes: while the shard's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  now in ms, or "" for Redis's clock
--
-- Reply: {now, due, then length and ran per level, lowest first}: due is
-- the earliest scheduled task's due time or lease deadline in ms, 0 when
-- none; then shard_view's pairs (view.lua).
--
-- Keys it touches: those declared in KEYS, and s:<id> of the tasks at each
-- level's head, which no caller can name (safe: absent is declared, see
-- lease.lua).

local P = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local due = 0
local ok1, sch = pcall(redis.call, 'ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local ok2, dl = pcall(redis.call, 'ZRANGEBYSCORE', KEYS[2], '-inf', BELOW_ANCHOR, 'WITHSCORES', 'LIMIT', 0, 1)
if ok1 and sch[2] then due = tonumber(sch[2]) end
if ok2 and dl[2] and (due == 0 or tonumber(dl[2]) < due) then due = tonumber(dl[2]) end
return shard_view({now, due}, P, #KEYS - 5)
