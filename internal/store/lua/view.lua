-- view.lua: a shard's view for a lease on a queue of several shards
-- (shards_lease.go): per level, how many tasks wait and how many at the
-- head ran before. A preempted task goes back to the head of its level
-- and has a state key s:<id>; a task never leased has none. peek.lua
-- replies with it, and a lease call asked for it (option view) ends its
-- reply with it, so the worker's view of the shard it called is as fresh
-- as the call.
-- defines: paused_at ran_heads shard_view

-- paused_at reports whether pz, the paused key's value (",<level>:<mode>,
-- ...", "" or nil when none is), pauses level lvl.
local function paused_at(pz, lvl)
  return pz and string.find(pz, ',' .. lvl .. ':', 1, true) ~= nil
end

-- ran_heads returns how many tasks at the head of list key, up to most,
-- have a state key (under prefix pfx): most heads are fresh, so one LINDEX
-- and one EXISTS tell, and only a resumed head reads the next most - 1.
local function ran_heads(pfx, key, most)
  local head = redis.call('LINDEX', key, 0)
  if not head or redis.call('EXISTS', pfx .. 's:' .. head) == 0 then return 0 end
  if most <= 1 then return 1 end
  local heads = redis.call('LRANGE', key, 1, most - 1)
  local ran = 1
  while ran <= #heads and redis.call('EXISTS', pfx .. 's:' .. heads[ran]) == 1 do ran = ran + 1 end
  return ran
end

-- shard_view appends to out, for each level 0..maxl of the shard of
-- prefix pfx, its length and how many tasks at its head, up to 16, have
-- a state key (ran_heads). A key of another type counts as empty (a lease
-- call reports it), and so does a paused level (the paused key, declared
-- by its callers, ",<level>:<mode>,..."): no lease call gives its tasks,
-- whether the worker knows of the pause yet or not, so the lease
-- allocates nothing there and waits for none of them.
local function shard_view(out, pfx, maxl)
  local okp, pz = pcall(redis.call, 'GET', pfx .. 'paused')
  if not okp then pz = nil end
  for lvl = 0, maxl do
    local key = pfx .. 'p:' .. lvl
    local ok, n = pcall(redis.call, 'LLEN', key)
    if not ok or paused_at(pz, lvl) then n = 0 end
    local ran = 0
    if n > 0 then ran = ran_heads(pfx, key, 16) end
    out[#out + 1] = n
    out[#out + 1] = ran
  end
  return out
end
