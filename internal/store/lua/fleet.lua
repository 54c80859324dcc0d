-- fleet.lua: fleet_refuses, the fleet check of a reservation (see
-- Store.Reserve), part of lease.lua.
--
-- uses: prelude.lua
-- defines: fleet_refuses
--
-- fleet_refuses(now, w, minl, maxl, rv, skip) returns {-1} when another
-- live worker has a free slot where the urgent task could run, {-2} when
-- one runs an eligible preemptible task below the victim's level, or at
-- its level preempted fewer times than the victim, an error
-- reply when a fleet key holds the wrong type, or nil when worker w may
-- preempt. The urgent task comes from levels minl..maxl but those in the
-- set skip; rv is lease.lua's reserve option (victim, level, min_run,
-- max_pre, never).
--
-- Keys it reads, all built from P: alive (ZSET), cap, busy (HASHes),
-- running (ZSET), s:<id> of running tasks (STRINGs).

local function fleet_refuses(now, w, minl, maxl, rv, skip)
  local g = guard('alive', 'zset', 'cap', 'hash', 'busy', 'hash', 'running', 'zset')
  if g then return redis.error_reply(g) end
  local vlvl = rv.level
  -- The levels the urgent task may come from (the pops below).
  local want = {}
  for l = minl, maxl do
    if not skip[l] then want[l] = true end
  end
  -- A worker with slot pools (its heartbeat's layout after a second '@')
  -- counts only where the urgent task could run: a pool of those levels
  -- with a free slot, or one that borrows while another has one.
  local layouts = {}
  local function layout(o)
    if layouts[o] == nil then
      local c = redis.call('HGET', P .. 'cap', o) or ''
      local lay = string.match(c, '^[^@]*@[^@]*@(.+)$')
      local pools = false
      if lay then
        pools = {free = false}
        for bd, sz, ls, br in string.gmatch(lay, '(%d+):(%d+):([%d,]*):(%d)') do
          local p = {bd = bd, fr = tonumber(sz) - num(redis.call('HGET', P .. 'busy', o .. '|' .. bd)),
            br = br == '1', lv = {}, hit = false}
          for l in string.gmatch(ls, '%d+') do
            p.lv[tonumber(l)] = true
            if want[tonumber(l)] then p.hit = true end
          end
          if p.fr > 0 then pools.free = true end
          pools[#pools + 1] = p
        end
      end
      layouts[o] = {c = c, pools = pools}
    end
    return layouts[o]
  end
  local live = redis.call('ZRANGEBYSCORE', P .. 'alive', now, '+inf')
  for _, o in ipairs(live) do
    if o ~= w then
      local lo = layout(o)
      if lo.pools then
        for _, p in ipairs(lo.pools) do
          if p.hit and (p.fr > 0 or (p.br and lo.pools.free)) then return {-1} end
        end
      elseif num(string.match(lo.c, '^%-?%d+')) - num(redis.call('HGET', P .. 'busy', o)) > 0 then
        return {-1}
      end
    end
  end
  local minrun, maxpre, never = rv.min_run or 0, rv.max_pre or -1, {}
  if rv.never then for _, l in ipairs(rv.never) do never[l] = true end end
  -- Within the victim's level, a task preempted fewer times gives way
  -- first (the runtime's victim order, across the fleet); read only when
  -- the victim was preempted before, when one can have fewer.
  local vpre = num((sget(rv.victim) or {}).pre)
  local top = '(' .. vlvl
  if vpre > 0 then top = vlvl end
  local lower = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', top, 'WITHSCORES', 'LIMIT', 0, 50)
  for i = 1, #lower, 2 do
    local id, lvl = lower[i], lower[i + 1]
    local s = sget(id) or {}
    local ow = s.w
    local ow_live = ow and num(redis.call('ZSCORE', P .. 'alive', ow)) >= now
    local same = true -- with pools, ow preempts inside the urgent task's pool
    if ow and ow ~= w and ow_live then
      local lo = layout(ow)
      if lo.pools then
        same = false
        for _, p in ipairs(lo.pools) do
          if p.hit and (p.bd == s.b or p.lv[tonumber(lvl)]) then same = true end
        end
      end
    end
    if ow ~= w and ow_live and same and not never[tonumber(lvl)]
      and num(s.stt) + minrun <= now
      and (maxpre < 0 or num(s.pre) < maxpre)
      and (tonumber(lvl) < vlvl or num(s.pre) < vpre) then
      return {-2}
    end
  end
  return nil
end
