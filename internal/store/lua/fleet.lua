-- fleet.lua: fleet_refuses, the fleet check of a reservation (see
-- Store.Reserve), part of lease.lua.
--
-- uses: fields.lua prelude.lua
-- defines: fleet_refuses
--
-- fleet_refuses(now, w, minl, maxl, rv, skip) returns {-1} when another
-- live worker has a free slot where the urgent task could run, {-2} when
-- one runs an eligible preemptible task below the victim's level, or at
-- its level preempted fewer times than the victim, an error
-- reply when a fleet key holds the wrong type, or nil when worker w may
-- preempt. The urgent task comes from levels minl..maxl but those in the
-- set skip; rv is lease.lua's reserve option (victim, level, min_run,
-- max_pre, never; on a queue of several shards also xbusy, the leases
-- workers hold in the other shards by busy field, xrun, the other shards'
-- running tasks at or below the victim's level as {id, level, worker,
-- leased at, preemptions, pool}, and vpre, the victim's preemptions when
-- it lives in another shard: see shards_fleet.go).
--
-- Keys it reads, all built from P: alive (ZSET), cap, busy (HASHes),
-- running (ZSET), s:<id> of running tasks (STRINGs).

-- Its helpers are local to it, so that a lease call without a
-- reservation does not make them.
local function fleet_refuses(now, w, minl, maxl, rv, skip)
  local g = guard('alive', 'zset', 'cap', 'hash', 'busy', 'hash', 'running', 'zset')
  if g then return redis.error_reply(g) end
  local vlvl = rv.level
  local xb = rv.xbusy or {}
  -- busy is field f of the busy hash, with the other shards' leases.
  local function busy(f) return num(redis.call('HGET', P .. 'busy', f)) + (tonumber(xb[f]) or 0) end
  -- The levels the urgent task may come from (the pops below).
  local want = {}
  for l = minl, maxl do
    if not skip[l] then want[l] = true end
  end
  -- read_pools parses worker o's slot pools, lay (its cap field after a
  -- second '@'): per pool its number bd, free slots fr, whether it
  -- borrows br, its levels lv (a set) and whether one of them is in want
  -- (hit); pools.free says whether any pool has a free slot.
  local function read_pools(o, lay)
    local pools = {free = false}
    for bd, sz, ls, br in string.gmatch(lay, '(%d+):(%d+):([%d,]*):(%d)') do
      local p = {bd = bd, fr = tonumber(sz) - busy(o .. '|' .. bd),
        br = br == '1', lv = {}, hit = false}
      for l in string.gmatch(ls, '%d+') do
        p.lv[tonumber(l)] = true
        p.hit = p.hit or want[tonumber(l)] == true
      end
      pools.free = pools.free or p.fr > 0
      pools[#pools + 1] = p
    end
    return pools
  end
  -- layout returns worker o's cap field c and its slot pools (false
  -- without), read once per call into layouts. A worker with slot pools
  -- (its heartbeat's layout after a second '@') counts only where the
  -- urgent task could run: a pool of those levels (want) with a free
  -- slot, or one that borrows while another has one.
  local layouts = {}
  local function layout(o)
    if layouts[o] == nil then
      local c = redis.call('HGET', P .. 'cap', o) or ''
      local lay = string.match(c, '^[^@]*@[^@]*@(.+)$')
      layouts[o] = {c = c, pools = lay and read_pools(o, lay) or false}
    end
    return layouts[o]
  end
  -- free_slot says whether worker o (its layout lo) has a free slot
  -- where the urgent task could run.
  local function free_slot(lo, o)
    if not lo.pools then
      return num(string.match(lo.c, '^%-?%d+')) - busy(o) > 0
    end
    for _, p in ipairs(lo.pools) do
      if p.hit and (p.fr > 0 or (p.br and lo.pools.free)) then return true end
    end
    return false
  end
  -- same_pool says whether a worker with layout lo would preempt its
  -- task (state s, at level lvl) for the urgent task: without pools
  -- always, with them when the task runs in a pool the urgent task could
  -- take.
  local function same_pool(lo, s, lvl)
    if not lo.pools then return true end
    for _, p in ipairs(lo.pools) do
      if p.hit and (p.bd == s[F_POOL] or p.lv[tonumber(lvl)]) then return true end
    end
    return false
  end
  local live = redis.call('ZRANGEBYSCORE', P .. 'alive', now, '+inf')
  for _, o in ipairs(live) do
    if o ~= w and free_slot(layout(o), o) then return {-1} end
  end
  local minrun, maxpre, never = rv.min_run or 0, rv.max_pre or -1, {}
  if rv.never then for _, l in ipairs(rv.never) do never[l] = true end end
  -- Within the victim's level, a task preempted fewer times gives way
  -- first (the runtime's victim order, across the fleet); read only when
  -- the victim was preempted before, when one can have fewer.
  local vpre = rv.vpre or num((sget(rv.victim) or {})[F_PREEMPTIONS])
  local top = '(' .. vlvl
  if vpre > 0 then top = vlvl end
  -- lower_elsewhere says whether a task in state s at level lvl, running
  -- on another live worker, is an eligible victim below this one.
  local function lower_elsewhere(s, lvl)
    local ow = s[F_WORKER]
    local ow_live = ow and num(redis.call('ZSCORE', P .. 'alive', ow)) >= now
    -- A live owner with slot pools preempts inside the urgent task's pool.
    local same = not (ow and ow ~= w and ow_live) or same_pool(layout(ow), s, lvl)
    return ow ~= w and ow_live and same and not never[tonumber(lvl)]
      and num(s[F_LEASED_AT]) + minrun <= now
      and (maxpre < 0 or num(s[F_PREEMPTIONS]) < maxpre)
      and (tonumber(lvl) < vlvl or num(s[F_PREEMPTIONS]) < vpre)
  end
  local lower = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', top, 'WITHSCORES', 'LIMIT', 0, 50)
  for i = 1, #lower, 2 do
    if lower_elsewhere(sget(lower[i]) or {}, lower[i + 1]) then return {-2} end
  end
  for _, x in ipairs(rv.xrun or {}) do
    local s = {[F_WORKER] = x[3], [F_LEASED_AT] = x[4], [F_PREEMPTIONS] = x[5], [F_POOL] = x[6]}
    if x[1] ~= rv.victim and lower_elsewhere(s, x[2]) then return {-2} end
  end
  return nil
end
