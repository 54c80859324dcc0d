-- lease.lua: the lease call (Store.Lease, Store.Reserve). It ends the
-- leases of the acks it carries, promotes due scheduled tasks, recovers
-- expired leases, ages long-waiting tasks up a level (Config.AgeAfter),
-- then leases up to count tasks, highest level first, FIFO within a level, with
-- one LMPOP per run of levels, one MGET for every task's keys and one write
-- per shared key, whatever the count. In a reservation (for preemption)
-- it first checks the fleet (see fleet.lua).
--
-- The whole lease is these files, in this order, then this one:
-- uses: prelude.lua anchor.lua acks.lua fleet.lua
--
-- KEYS     (built by the caller, newScriptKeys in declare.go; the script
--          builds the same names from P) leases, running, scheduled, dead,
--          alive (ZSETs), busy, cap, n (HASHes), paused (STRING), feed
--          (STREAM), p:0..p:<max level> (LISTs), then t:<id>, s:<id>,
--          c:<id> of each ack the call carries, then
--          absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix "{<ns>:<queue>}:" (P)
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3]  lease duration in ms
-- ARGV[4]  worker ID
-- ARGV[5]  the call's token: every task leased gets it (a lease is the
--          pair of ID and token)
-- ARGV[6]  max level (the queue's top level)
-- ARGV[7]  "1" to promote due tasks, recover expired leases and age first
-- ARGV[8]  the options, a JSON object (leaseArgs in lease.go); a field
--          left out takes the value in brackets:
--            count    how many tasks to lease, without groups [1]
--            min      the lowest level to lease from, without groups [0]
--            skip     levels not to take from (paused, or never
--                     preempting in a reservation), an array [none]
--            age      age after ms (Config.AgeAfter) [0: no aging]
--            groups   LeaseRequest.Groups, an array of {count, levels (an
--                     array, highest first), pool (the slot pool its tasks
--                     hold, a string) [none], spare (true: it takes what
--                     earlier counted groups left, and count is ignored)
--                     [false]} [one group of count tasks from max level
--                     down to min]
--            reserve  present in a reservation (preemption), an object:
--                     victim (ID), level (the victim's), min_run (ms: a
--                     task that ran less is no victim) [0], max_pre (max
--                     preemptions of a victim, -1 none) [-1], never
--                     (never-preempted levels, an array) [none],
--                     ignore_fleet (true: skip the fleet check,
--                     ReserveRequest.IgnoreFleet) [false], pool (the slot
--                     pool the urgent task holds) [none]
-- ARGV[9..] the acks the call carries: id, token, id, token, ... (none in
--          a reservation)
--
-- Reply: {code, now, deadline, {corrupt...}, {taken per group}, {ack
-- results, as finish.lua's}, then id, record, state, checkpoint (false if
-- none) per task leased}. A corrupt entry is a CORRUPT message, or
-- {id, level, message} for a task set aside (its record key held another
-- type: renamed x:<id>, the task dead-lettered at the level it was
-- popped from). code is the ms until the earliest scheduled task
-- is due or lease expires when nothing was popped (0: none), or -1 / -2
-- alone when a reservation is refused (a free slot / a lower victim
-- elsewhere), or an error reply (CORRUPT ...) when a shared key holds
-- another type.
--
-- Keys it touches: those declared in KEYS, and keys of tasks it finds as it
-- runs, which no caller can name: t:<id>, s:<id>, c:<id> (STRINGs; x:<id>,
-- xs:<id> when set aside) of the tasks it pops, promotes or recovers; the
-- channel wake. They are safe because absent is declared: the script runs
-- only while the slot does not move, and then every key of it is local.

-- The bytes prb0 reads in a record's header, "2|<level>|<preemptible>|".
local BYTE_TWO, BYTE_BAR, BYTE_ZERO = 50, 124, 48 -- '2', '|', '0'

local now = clock(ARGV[2])
local dl, w, tok, maxl = now + tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
local opt = cjson.decode(ARGV[8])
local rv = opt.reserve -- nil unless a reservation
local count, minl, age_after = opt.count or 1, opt.min or 0, opt.age or 0
-- skip: the levels not to take from, as a set.
local skip = {}
if opt.skip then for _, l in ipairs(opt.skip) do skip[l] = true end end
-- The sweep's reads and checks come first: a wrong-typed key fails the
-- call before anything is written.
local bad = {}
local sweep, sch, exp = false, nil, nil
if ARGV[7] == '1' then
  local e
  sch, exp, e = due_reads(now, bad)
  if e then return redis.error_reply(e) end
  sweep = #sch > 0 or #exp > 0 or age_after > 0
  if sweep then
    local g = shared() or guard('scheduled', 'zset')
    if g then return redis.error_reply(g) end
  end
end
-- The acks this call carries (ARGV[9..]: id, token) end their leases
-- before the sweep recovers expired ones, which would take back a lease
-- that expired while its ack could not land (the slot migrating, say; an
-- acked ID read as expired has no state left, and recover skips it), and
-- before new leases count, so their slots' counts are settled.
local acked = {}
if #ARGV > 8 and not rv then
  acked = fast_acks(8, 2, (#ARGV - 8) / 2)
  if acked.err then return acked end
end
if sweep then
  promote(sch, now, maxl, bad)
  recover(exp, now, bad)
  age(now, age_after, maxl, bad)
end
if rv and not rv.ignore_fleet then
  local refused = fleet_refuses(now, w, minl, maxl, rv, skip)
  if refused then return refused end
end
-- Pop IDs, highest level first; a wrong-typed list fails its LPOP, which
-- writes nothing: that level is reported and the others go on. IDs that
-- yield no task (a record deleted or set aside) are replaced by popping
-- again, so they delay nothing.
local taken = {}
local out = {0, now, dl, bad, taken, acked}
local set, lz, rz, acnt, leased = {}, {}, {}, {}, {}
-- Lengths kept by hand: # costs a search per append in Lua 5.1.
local ns, nr, no = 0, 0, #out
local ids, lvls = {}, {}
local n, popped, stuck, drained = 0, 0, false
local first -- the first task leased: the urgent one of a reservation
-- Numbers turned into strings once per call, not once per task (each
-- conversion is a sprintf); a plain worker ID is quoted without cjson.
local nows, dls, LS = tostring(now), tostring(dl), {}
for l = 0, maxl do LS[l] = tostring(l) end
local wj = '"' .. w .. '"'
if string.find(w, '[%c"\\/]') then wj = cjson.encode(w) end
-- Every task of a call shares the call's token (a lease is the pair of
-- ID and token), so a fresh task's state is the same string for every
-- task of a level (and slot pool): joined once per call, in JS1, and
-- found again by the ack (see fast_acks) without parsing it.
local JS_W = '","w":' .. wj .. ',"tk":"' .. tok .. '","stt":"' .. nows .. '"'
local JS1 = {}
-- prb0 says whether a record's header marks it not preemptible
-- ("2|<level>|0|"), without parsing the rest of it: one C call for a
-- level of one digit.
local function prb0(rec)
  local b1, b2, b3, b4, b5, b6 = string.byte(rec, 1, 6)
  if b1 ~= BYTE_TWO or b2 ~= BYTE_BAR then return false end
  if b4 == BYTE_BAR and b3 ~= BYTE_BAR then return b5 == BYTE_ZERO and b6 == BYTE_BAR end
  local p = string.find(rec, '|', 3, true)
  return p ~= nil and string.byte(rec, p + 1) == BYTE_ZERO and string.byte(rec, p + 2) == BYTE_BAR
end
local broken, mine = {}, {}
local EMPTY = {} -- the state of a fresh task, never written to
-- Groups (LeaseRequest.Groups): each takes up to its count from its levels,
-- in order; a spare group (spare: true) takes what earlier counted groups
-- left.
local groups = opt.groups
if not groups then
  local lv = {}
  for lvl = maxl, minl, -1 do lv[#lv + 1] = lvl end
  groups = {{count = count, levels = lv, pool = rv and rv.pool}}
end
local spare = 0
-- Slot pools (bands): a task leased by a counted group holds a slot of
-- that group's pool; one leased by a spare group holds a slot the counted
-- groups left free, the first in their order (as the runtime assigns them).
local lend, lend_i, bcnt = {}, 1, {}
local function slot_band(g)
  if not g.spare then return g.pool end
  while lend_i <= #lend and lend[lend_i].left <= 0 do lend_i = lend_i + 1 end
  if lend_i > #lend then return nil end
  lend[lend_i].left = lend[lend_i].left - 1
  return lend[lend_i].bd
end
for gi, g in ipairs(groups) do
  local want = spare
  if not g.spare then want = g.count end
  local n0 = n
  count = n + want
  if want > 0 and not stuck then
  repeat
    local from = #ids + 1
    -- LMPOP takes from the highest non-empty level in one command; the
    -- loop goes on to lower levels while slots are left.
    local levels = {}
    for _, lvl in ipairs(g.levels) do
      if not broken[lvl] and not skip[lvl] then levels[#levels + 1] = lvl end
    end
    local at = 1
    local ask = count - n
    while at <= #levels and #ids - from + 1 + n < count do
      local args = {'LMPOP', #levels - at + 1}
      for j = at, #levels do args[#args + 1] = P .. 'p:' .. levels[j] end
      args[#args + 1] = 'LEFT'; args[#args + 1] = 'COUNT'; args[#args + 1] = count - n - (#ids - from + 1)
      local ok, got = pcall(redis.call, unpack(args))
      if not ok then
        -- A wrong-typed list: find it with one LPOP per level (each fails
        -- without writing), report it and take from the others.
        for j = at, #levels do
          local lvl, key = levels[j], P .. 'p:' .. levels[j]
          if #ids - from + 1 + n >= count then break end
          local ok2, got2 = pcall(redis.call, 'LPOP', key, count - n - (#ids - from + 1))
          if not ok2 then
            broken[lvl] = true
            bad[#bad + 1] = 'CORRUPT ' .. key .. ' is a ' .. typeof(key) .. ', want a list'
          elseif got2 then
            for _, id in ipairs(got2) do ids[#ids + 1] = id; lvls[#lvls + 1] = lvl end
          end
        end
        break
      end
      if not got then break end
      local key = got[1]
      local j = at
      while j <= #levels and P .. 'p:' .. levels[j] ~= key do j = j + 1 end
      local k, lj = #ids, levels[j]
      for _, id in ipairs(got[2]) do k = k + 1; ids[k] = id; lvls[k] = lj end
      at = j + 1
    end
    if #ids < from then break end
    -- Fewer than asked: every list popped is empty now, so popping again
    -- (to replace IDs that yield no task) would find nothing.
    drained = #ids - from + 1 < ask
    popped = #ids
    local mk, m = {}, 0
    for i = from, #ids do
      local id = ids[i]
      mk[m + 1] = P .. 't:' .. id; mk[m + 2] = P .. 's:' .. id
      m = m + 2
    end
    -- The paused key rides along (no extra command): a level paused while
    -- this worker did not know yet is put back, untouched, and skipped.
    mk[m + 1] = P .. 'paused'
    local vals = redis.call('MGET', unpack(mk))
    -- Checkpoints, read only for tasks with a state: a fresh task (the
    -- common case) has none, since a save needs a lease, which writes one.
    local ck, cat, cps = {}, {}, {}
    for i = from, #ids do
      if vals[2 * (i - from) + 2] then ck[#ck + 1] = P .. 'c:' .. ids[i]; cat[#ck] = i end
    end
    if #ck > 0 then
      local got = redis.call('MGET', unpack(ck))
      for k, i in ipairs(cat) do cps[i] = got[k] end
    end
    local pz, held = vals[#vals], {}
    if pz then
      for i = #ids, from, -1 do
        if string.find(pz, ',' .. lvls[i] .. ':', 1, true) then
          redis.call('LPUSH', P .. 'p:' .. lvls[i], ids[i]); held[i] = true; broken[lvls[i]] = true
        end
      end
    end
    -- An ID twice in the lists (a record deleted behind its list's back,
    -- then enqueued again) is one task: one lease, the other entry dropped
    -- as stale (two copies would share the call's token).
    for i = from, #ids do
      if not held[i] then
        if mine[ids[i]] then held[i] = true else mine[ids[i]] = true end
      end
    end
    for i = from, #ids do
      if not held[i] then
        local id, lvl = ids[i], lvls[i]
        local ls = LS[lvl] or tostring(lvl)
        local j = 2 * (i - from)
        local rec, raw, cp = vals[j + 1], vals[j + 2], cps[i]
        local s = EMPTY
        if raw then s = decode(raw) end
        if not rec then
          local t = typeof(tkey(id))
          local gd = t ~= 'none' and guard('dead', 'zset', 'n', 'hash')
          if gd then
            -- Nowhere safe to put it: back at the head of its list, unchanged.
            redis.call('LPUSH', P .. 'p:' .. lvl, id)
            bad[#bad + 1] = gd
            stuck = true
          elseif t ~= 'none' then
            set_aside(id, now, 'corrupt record: ' .. tkey(id) .. ' is a ' .. t .. ', want a string', ls)
            bad[#bad + 1] = {id, ls, 'CORRUPT ' .. tkey(id) .. ' is a ' .. t ..
              ', want a string (set aside as x:' .. id .. ', dead-lettered at level ' .. ls .. ')'}
          elseif raw then
            redis.call('DEL', skey(id), ckey(id)) -- deleted behind its list's back
          end
        else
          if not s then
            if typeof(skey(id)) ~= 'none' and typeof(skey(id)) ~= 'string' then
              redis.call('RENAME', skey(id), P .. 'xs:' .. id)
              bad[#bad + 1] = 'CORRUPT ' .. skey(id) .. ' was not a string (set aside as xs:' .. id .. ')'
            end
            s = {}
          end
          n = n + 1
          local js
          local band = slot_band(g)
          if band then bcnt[band] = (bcnt[band] or 0) + 1 end
          if not raw then
            -- A fresh task (the common case): its state written by hand.
            local jk = ls
            if band then jk = ls .. '|' .. band end
            js = JS1[jk]
            if not js then
              js = '{"st":"active","l":"' .. ls .. '","al":"' .. ls .. JS_W
              if band then js = js .. ',"b":"' .. band .. '"}' else js = js .. '}' end
              JS1[jk] = js
            end
          else
            s.st, s.l, s.w, s.tk, s.stt, s.al, s.b = 'active', ls, w, tok, nows, ls, band
            js = cjson.encode(s)
          end
          set[ns + 1] = mk[j + 2]; set[ns + 2] = js; ns = ns + 2
          lz[ns - 1] = dls; lz[ns] = id
          -- The fleet looks in running for victims below an urgent task:
          -- the top level is below none, so its tasks are left out.
          if lvl < maxl and not prb0(rec) then rz[nr + 1] = ls; rz[nr + 2] = id; nr = nr + 2 end
          if n == 1 then
            local h = header(rec)
            first = {id = id, lvl = lvl, rdy = num(s.rdy or (h and h.enq))}
          end
          if raw and num(s.pre) > 0 then
            -- A preempted task resumes: the preemption feed says where.
            feed('resumed', now, 'id', id, 'l', lvl, 'w', w, 'pre', s.pre, 'cps', s.cps or '0')
          end
          acnt[lvl] = (acnt[lvl] or 0) + 1
          leased[i] = true
          out[no + 1] = id; out[no + 2] = rec; out[no + 3] = js; out[no + 4] = cp or false; no = no + 4
        end
      end
    end
  until n >= count or stuck or drained
  end
  taken[gi] = n - n0
  if g.spare then
    spare = spare - taken[gi]
  else
    spare = spare + want - taken[gi]
    if g.pool then lend[#lend + 1] = {bd = g.pool, left = want - taken[gi]} end
  end
end
if popped == 0 then
  local ok1, s = pcall(redis.call, 'ZRANGE', P .. 'scheduled', 0, 0, 'WITHSCORES')
  local ok2, l = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'leases', '-inf', BELOW_ANCHOR, 'WITHSCORES', 'LIMIT', 0, 1)
  if not ok1 then s = {} end
  if not ok2 then l = {} end
  local due = 0
  if s[2] then due = tonumber(s[2]) end
  if l[2] and (due == 0 or tonumber(l[2]) < due) then due = tonumber(l[2]) end
  if due > 0 then out[1] = math.max(due - now, 1) end
  return out
end
if n > 0 then
  -- The first write to each shared key is the one a wrong type fails; a
  -- failure undoes what came before (the IDs go back to the heads of their
  -- lists) and changes nothing.
  local undo = {}
  local function fail(suffix, want)
    for j = #undo, 1, -1 do undo[j]() end
    local k = P .. suffix
    return redis.error_reply('CORRUPT ' .. k .. ' is a ' .. typeof(k) .. ', want a ' .. want)
  end
  undo[1] = function()
    for i = #ids, 1, -1 do
      if leased[i] then redis.call('LPUSH', P .. 'p:' .. lvls[i], ids[i]) end
    end
  end
  -- A reservation ends by taking its victim out of running, a write no
  -- undo follows: the fleet check has checked its type, and when that
  -- check is skipped it is checked here (the urgent task's own ZADD may
  -- not run, as the top level stays out of running).
  if rv and rv.ignore_fleet and guard('running', 'zset') then return fail('running', 'zset') end
  if not pcall(redis.call, 'HINCRBY', P .. 'busy', w, n) then return fail('busy', 'hash') end
  undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'busy', w, -n) end
  for b, k in pairs(bcnt) do
    redis.call('HINCRBY', P .. 'busy', w .. '|' .. b, k)
    undo[#undo + 1] = function() band_release(w, b, -k) end
  end
  for l, k in pairs(acnt) do
    if not pcall(redis.call, 'HINCRBY', P .. 'n', 'a' .. l, k) then return fail('n', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'n', 'a' .. l, -k) end
  end
  if #rz > 0 then
    rz[#rz + 1] = ANCHOR_SCORE; rz[#rz + 1] = ANCHOR -- keeps the set a skiplist (anchor.go)
    if not pcall(redis.call, 'ZADD', P .. 'running', unpack(rz)) then return fail('running', 'zset') end
    undo[#undo + 1] = function()
      local rm = {}
      for i = 1, #ids do if leased[i] then rm[#rm + 1] = ids[i] end end
      redis.call('ZREM', P .. 'running', unpack(rm))
    end
  end
  lz[#lz + 1] = ANCHOR_SCORE; lz[#lz + 1] = ANCHOR
  if not pcall(redis.call, 'ZADD', P .. 'leases', unpack(lz)) then return fail('leases', 'zset') end
  redis.call('MSET', unpack(set))
  if rv then
    redis.call('ZREM', P .. 'running', rv.victim)
    feed('preempt', now, 'id', first.id, 'l', first.lvl, 'victim', rv.victim, 'vl', rv.level, 'w', w,
      'wait', math.max(now - first.rdy, 0))
  end
end
return out
