-- view.lua: a shard's view for a lease on a queue of several shards
-- (shards_lease.go): per level, how many tasks wait and how many at the
-- head ran before. A preempted task goes back to the head of its level
-- and has a state key s:<id>; a task never leased has none. peek.lua
-- replies with it, and a lease call asked for it (option view) ends its
-- reply with it, so the worker's view of the shard it called is as fresh
-- as the call.
-- defines: shard_view

-- shard_view appends to out, for each level 0..maxl of the shard of
-- prefix pfx, its length and how many tasks at its head, up to 16, have
-- a state key. Most heads are fresh: one LINDEX and one EXISTS tell, and
-- only a resumed head reads the next 15. A key of another type counts as
-- empty (a lease call reports it).
local function shard_view(out, pfx, maxl)
  for lvl = 0, maxl do
    local key = pfx .. 'p:' .. lvl
    local ok, n = pcall(redis.call, 'LLEN', key)
    if not ok then n = 0 end
    local ran = 0
    if n > 0 and redis.call('EXISTS', pfx .. 's:' .. redis.call('LINDEX', key, 0)) == 1 then
      local heads = redis.call('LRANGE', key, 1, 15)
      ran = 1
      while ran <= #heads and redis.call('EXISTS', pfx .. 's:' .. heads[ran]) == 1 do ran = ran + 1 end
    end
    out[#out + 1] = n
    out[#out + 1] = ran
  end
  return out
end
