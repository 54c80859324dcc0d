-- lease.lua: the lease call (Store.Lease, Store.Reserve). It ends the
-- leases of the acks it carries, promotes due scheduled tasks, recovers
-- expired leases, ages long-waiting tasks up a level (Config.AgeAfter),
-- then leases up to count tasks, highest level first, FIFO within a level, with
-- one LMPOP per run of levels, one MGET for every task's keys and one write
-- per shared key, whatever the count. In a reservation (for preemption)
-- it first checks the fleet (see fleet.lua).
--
-- The whole lease is these files, in this order, then this one:
-- uses: fields.lua prelude.lua anchor.lua acks.lua fleet.lua
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

-- The stages, in the order the main body at the end calls them: end_acks,
-- then prelude.lua's promote, recover and age (the sweep), the fleet check
-- of a reservation, then per group of levels, while it wants tasks:
-- choose_levels, pop, load_tasks, admit; then write and reply. They share
-- the call's inputs and what it has gathered so far, the locals below.

-- The bytes prb0 reads in a record's header, "2|<level>|<preemptible>|".
local BYTE_TWO, BYTE_BAR, BYTE_ZERO = 50, 124, 48 -- '2', '|', '0'

-- The call's inputs (ARGV).
local now = clock(ARGV[2])
local dl, w, tok, maxl = now + tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
local opt = cjson.decode(ARGV[8])
local rv = opt.reserve -- nil unless a reservation
local count, minl, age_after = opt.count or 1, opt.min or 0, opt.age or 0
-- skip: the levels not to take from, as a set.
local skip = {}
if opt.skip then for _, l in ipairs(opt.skip) do skip[l] = true end end
-- Groups (LeaseRequest.Groups): each takes up to its count from its levels,
-- in order; a spare group (spare: true) takes what earlier counted groups
-- left.
local groups = opt.groups
if not groups then
  local lv = {}
  for lvl = maxl, minl, -1 do lv[#lv + 1] = lvl end
  groups = {{count = count, levels = lv, pool = rv and rv.pool}}
end

-- What the stages gather. bad: corruption found (the reply's fourth
-- entry); sweep: whether to promote, recover and age (sch, exp: the due
-- scheduled IDs and expired leases read for it).
local bad = {}
local sweep, sch, exp = false, nil, nil
local taken = {}
local out = {0, now, dl, bad, taken, {}}
-- Per task leased: set (its state key and state, for MSET), lz (deadline
-- and ID, for ZADD leases), rz (level and ID, for ZADD running); per level
-- acnt (how many leased), per slot pool bcnt; leased[i]: ids[i] was leased.
local set, lz, rz, acnt, leased, bcnt = {}, {}, {}, {}, {}, {}
-- Lengths kept by hand: # costs a search per append in Lua 5.1.
local ns, nr, no = 0, 0, #out
-- Every ID popped and the level it came from, in order.
local ids, lvls = {}, {}
-- n: tasks leased; count: how many the call wants so far (the groups up
-- to the current one); stuck: a task found nowhere safe to go, the call
-- takes no more; drained: the last pop found fewer than it asked.
local n, popped, stuck, drained = 0, 0, false
local first -- the first task leased: the urgent one of a reservation
-- Levels found wrong-typed or paused (not popped again), IDs taken.
local broken, mine = {}, {}
local EMPTY = {} -- the state of a fresh task, never written to
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
local JS_W = '","' .. F_WORKER .. '":' .. wj .. ',"' .. F_TOKEN .. '":"' .. tok .. '","' .. F_LEASED_AT .. '":"' .. nows .. '"'
local JS1 = {}
-- Slot pools (bands): a task leased by a counted group holds a slot of
-- that group's pool; one leased by a spare group holds a slot the counted
-- groups left free, the first in their order (as the runtime assigns them).
-- spare: what the counted groups so far left untaken; lend: their pools
-- and the slots each left.
local spare, lend, lend_i = 0, {}, 1

-- read_due makes the sweep's reads and checks, which come first: a
-- wrong-typed key fails the call before anything is written.
local function read_due()
  if ARGV[7] ~= '1' then return nil end
  local e
  sch, exp, e = due_reads(now, bad)
  if e then return redis.error_reply(e) end
  sweep = #sch > 0 or #exp > 0 or age_after > 0
  local g = sweep and (shared() or guard('scheduled', 'zset'))
  if g then return redis.error_reply(g) end
  return nil
end

-- end_acks ends the leases of the acks this call carries (ARGV[9..]: id,
-- token) before the sweep recovers expired ones, which would take back a
-- lease that expired while its ack could not land (the slot migrating,
-- say; an acked ID read as expired has no state left, and recover skips
-- it), and before new leases count, so their slots' counts are settled.
local function end_acks()
  if #ARGV <= 8 or rv then return nil end
  local acked = fast_acks(8, 2, (#ARGV - 8) / 2)
  if acked.err then return acked end
  out[6] = acked
  return nil
end

-- check_fleet refuses a reservation when the fleet has a better place
-- for the urgent task (see fleet.lua), unless told to skip the check.
local function check_fleet()
  if not rv or rv.ignore_fleet then return nil end
  return fleet_refuses(now, w, minl, maxl, rv, skip)
end

-- open_group starts group g: it returns how many tasks g wants (a spare
-- group: what the counted groups before it left) and raises count by it.
local function open_group(g)
  local want = g.spare and spare or g.count
  count = n + want
  return want
end

-- close_group records that group gi (g, wanting want) took got tasks,
-- and what it leaves to the spare groups after it.
local function close_group(gi, g, want, got)
  taken[gi] = got
  if g.spare then
    spare = spare - got
    return
  end
  spare = spare + want - got
  if g.pool then lend[#lend + 1] = {bd = g.pool, left = want - got} end
end

-- choose_levels returns group g's levels to pop from, highest first: not
-- those skipped, nor those found wrong-typed or paused.
local function choose_levels(g)
  local levels = {}
  for _, lvl in ipairs(g.levels) do
    if not broken[lvl] and not skip[lvl] then levels[#levels + 1] = lvl end
  end
  return levels
end

-- pop_each pops from levels[at..] one LPOP per level, after an LMPOP
-- failed on a wrong-typed list: each fails without writing, so the bad
-- list is found, reported and skipped, and the others still give.
local function pop_each(levels, at, from)
  for j = at, #levels do
    local lvl, key = levels[j], P .. 'p:' .. levels[j]
    if #ids - from + 1 + n >= count then break end
    local ok, got = pcall(redis.call, 'LPOP', key, count - n - (#ids - from + 1))
    if not ok then
      broken[lvl] = true
      bad[#bad + 1] = 'CORRUPT ' .. key .. ' is a ' .. typeof(key) .. ', want a list'
    elseif got then
      for _, id in ipairs(got) do ids[#ids + 1] = id; lvls[#lvls + 1] = lvl end
    end
  end
end

-- pop appends to ids (from index from on) up to what the call still
-- wants, highest level first: LMPOP takes from the highest non-empty
-- level in one command, and the loop goes on to lower levels while slots
-- are left. It returns false when nothing was popped.
local function pop(levels, from)
  local at, ask = 1, count - n
  while at <= #levels and #ids - from + 1 + n < count do
    local args = {'LMPOP', #levels - at + 1}
    for j = at, #levels do args[#args + 1] = P .. 'p:' .. levels[j] end
    args[#args + 1] = 'LEFT'; args[#args + 1] = 'COUNT'; args[#args + 1] = count - n - (#ids - from + 1)
    local ok, got = pcall(redis.call, unpack(args))
    if not ok then
      pop_each(levels, at, from)
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
  if #ids < from then return false end
  -- Fewer than asked: every list popped is empty now, so popping again
  -- (to replace IDs that yield no task) would find nothing.
  drained = #ids - from + 1 < ask
  popped = #ids
  return true
end

-- hold_back puts back, untouched, the IDs popped from a level paused
-- while this worker did not know yet (pz, the paused key's value) and
-- skips that level from then on; an ID twice in the lists (a record
-- deleted behind its list's back, then enqueued again) is one task: one
-- lease, the other entry dropped as stale (two copies would share the
-- call's token). It returns the indexes into ids of the tasks to admit.
local function hold_back(from, pz)
  local held, keep = {}, {}
  if pz then
    for i = #ids, from, -1 do
      if string.find(pz, ',' .. lvls[i] .. ':', 1, true) then
        redis.call('LPUSH', P .. 'p:' .. lvls[i], ids[i]); held[i] = true; broken[lvls[i]] = true
      end
    end
  end
  for i = from, #ids do
    if not held[i] and not mine[ids[i]] then mine[ids[i]] = true; keep[#keep + 1] = i end
  end
  return keep
end

-- load_tasks reads what the IDs popped from index from on need: one MGET
-- of their records and states, with the paused key riding along (no
-- extra command), then one of the checkpoints, read only for tasks with a
-- state: a fresh task (the common case) has none, since a save needs a
-- lease, which writes one. It returns the keys read (t:, s: per task),
-- their values, the checkpoints by index and the indexes to admit.
local function load_tasks(from)
  local mk, m = {}, 0
  for i = from, #ids do
    local id = ids[i]
    mk[m + 1] = P .. 't:' .. id; mk[m + 2] = P .. 's:' .. id
    m = m + 2
  end
  mk[m + 1] = P .. 'paused'
  local vals = redis.call('MGET', unpack(mk))
  local ck, cat, cps = {}, {}, {}
  for i = from, #ids do
    if vals[2 * (i - from) + 2] then ck[#ck + 1] = P .. 'c:' .. ids[i]; cat[#ck] = i end
  end
  if #ck > 0 then
    local got = redis.call('MGET', unpack(ck))
    for k, i in ipairs(cat) do cps[i] = got[k] end
  end
  return mk, vals, cps, hold_back(from, vals[#vals])
end

-- drop handles a popped ID without a record (rec nil), at level lvl (ls,
-- its string): a record key of another type is set aside, or, with
-- nowhere safe to put it, the ID goes back to the head of its list,
-- unchanged, and the call takes no more; a state left behind a record
-- deleted behind its list's back goes.
local function drop(id, lvl, ls, raw)
  local t = typeof(tkey(id))
  local gd = t ~= 'none' and guard('dead', 'zset', 'n', 'hash')
  if gd then
    redis.call('LPUSH', P .. 'p:' .. lvl, id)
    bad[#bad + 1] = gd
    stuck = true
  elseif t ~= 'none' then
    set_aside(id, now, 'corrupt record: ' .. tkey(id) .. ' is a ' .. t .. ', want a string', ls)
    bad[#bad + 1] = {id, ls, 'CORRUPT ' .. tkey(id) .. ' is a ' .. t ..
      ', want a string (set aside as x:' .. id .. ', dead-lettered at level ' .. ls .. ')'}
  elseif raw then
    redis.call('DEL', skey(id), ckey(id))
  end
end

-- garbled returns the fresh state of a task whose state key did not hold
-- a JSON object: a key of another type is set aside as xs:<id>.
local function garbled(id)
  if typeof(skey(id)) ~= 'none' and typeof(skey(id)) ~= 'string' then
    redis.call('RENAME', skey(id), P .. 'xs:' .. id)
    bad[#bad + 1] = 'CORRUPT ' .. skey(id) .. ' was not a string (set aside as xs:' .. id .. ')'
  end
  return {}
end

-- slot_band returns the slot pool a task leased by group g holds.
local function slot_band(g)
  if not g.spare then return g.pool end
  while lend_i <= #lend and lend[lend_i].left <= 0 do lend_i = lend_i + 1 end
  if lend_i > #lend then return nil end
  lend[lend_i].left = lend[lend_i].left - 1
  return lend[lend_i].bd
end

-- fresh_state returns the state of a fresh task leased at level ls
-- holding slot pool band (nil: none), the string written by hand and kept
-- in JS1 under jk.
local function fresh_state(jk, ls, band)
  local js = '{"' .. F_STATE .. '":"active","' .. F_LEVEL .. '":"' .. ls .. '","' .. F_LEASED_LEVEL .. '":"' .. ls .. JS_W
  if band then js = js .. ',"' .. F_POOL .. '":"' .. band .. '"}' else js = js .. '}' end
  JS1[jk] = js
  return js
end

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

-- admit leases, for group g, the tasks load_tasks read (keys mk, values
-- vals, checkpoints cps, the indexes keep into ids): each gets its new
-- state and joins what write stores, and its reply entry (id, record,
-- state, checkpoint) is appended to out.
local function admit(g, from, mk, vals, cps, keep)
  for _, i in ipairs(keep) do
    local id, lvl = ids[i], lvls[i]
    local ls = LS[lvl] or tostring(lvl)
    local j = 2 * (i - from)
    local rec, raw = vals[j + 1], vals[j + 2]
    if not rec then
      drop(id, lvl, ls, raw)
    else
      local s = EMPTY
      if raw then s = decode(raw) or garbled(id) end
      n = n + 1
      local js
      local band = slot_band(g)
      if band then bcnt[band] = (bcnt[band] or 0) + 1 end
      if not raw then
        -- A fresh task (the common case): its state written by hand.
        local jk = band and ls .. '|' .. band or ls
        js = JS1[jk] or fresh_state(jk, ls, band)
      else
        s[F_STATE], s[F_LEVEL], s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL], s[F_POOL] = 'active', ls, w, tok, nows, ls, band
        js = cjson.encode(s)
      end
      set[ns + 1] = mk[j + 2]; set[ns + 2] = js; ns = ns + 2
      lz[ns - 1] = dls; lz[ns] = id
      -- The fleet looks in running for victims below an urgent task:
      -- the top level is below none, so its tasks are left out.
      if lvl < maxl and not prb0(rec) then rz[nr + 1] = ls; rz[nr + 2] = id; nr = nr + 2 end
      if n == 1 then
        local h = header(rec)
        first = {id = id, lvl = lvl, ready = num(s[F_READY_AT] or (h and h.enq))}
      end
      -- A preempted task resumes: the preemption feed says where.
      if raw and num(s[F_PREEMPTIONS]) > 0 then
        feed('resumed', now, 'id', id, 'l', lvl, 'w', w, 'pre', s[F_PREEMPTIONS], 'cps', s[F_CHECKPOINT_SEQ] or '0')
      end
      acnt[lvl] = (acnt[lvl] or 0) + 1
      leased[i] = true
      out[no + 1] = id; out[no + 2] = rec; out[no + 3] = js; out[no + 4] = cps[i] or false; no = no + 4
    end
  end
end

-- The writes of write that a later failing write undoes, in order.
local undo = {}

-- fail undoes what write did (the IDs go back to the heads of their
-- lists) and returns the CORRUPT error naming key P .. suffix.
local function fail(suffix, want)
  for j = #undo, 1, -1 do undo[j]() end
  local k = P .. suffix
  return redis.error_reply('CORRUPT ' .. k .. ' is a ' .. typeof(k) .. ', want a ' .. want)
end

-- unpop puts the leased IDs back at the heads of their lists.
local function unpop()
  for i = #ids, 1, -1 do
    if leased[i] then redis.call('LPUSH', P .. 'p:' .. lvls[i], ids[i]) end
  end
end

-- unrun takes the leased IDs out of running.
local function unrun()
  local rm = {}
  for i = 1, #ids do
    if leased[i] then rm[#rm + 1] = ids[i] end
  end
  redis.call('ZREM', P .. 'running', unpack(rm))
end

-- write stores the leases, one write per shared key: the worker's busy
-- counts, the active counters, running, leases, then every state in one
-- MSET. The first write to each shared key is the one a wrong type fails;
-- a failure undoes what came before and changes nothing (an error reply
-- is returned). A reservation ends by taking its victim out of running, a
-- write no undo follows: the fleet check has checked its type, and when
-- that check is skipped it is checked here (the urgent task's own ZADD
-- may not run, as the top level stays out of running).
local function write()
  undo[1] = unpop
  if rv and rv.ignore_fleet and guard('running', 'zset') then return fail('running', 'zset') end
  if not pcall(redis.call, 'HINCRBY', P .. 'busy', w, n) then return fail('busy', 'hash') end
  undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'busy', w, -n) end
  for b, k in pairs(bcnt) do
    redis.call('HINCRBY', P .. 'busy', w .. '|' .. b, k)
    undo[#undo + 1] = function() band_release(w, b, -k) end
  end
  for l, k in pairs(acnt) do
    if not pcall(redis.call, 'HINCRBY', P .. 'n', C_ACTIVE .. l, k) then return fail('n', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'n', C_ACTIVE .. l, -k) end
  end
  if #rz > 0 then
    rz[#rz + 1] = ANCHOR_SCORE; rz[#rz + 1] = ANCHOR -- keeps the set a skiplist (anchor.go)
    if not pcall(redis.call, 'ZADD', P .. 'running', unpack(rz)) then return fail('running', 'zset') end
    undo[#undo + 1] = unrun
  end
  lz[#lz + 1] = ANCHOR_SCORE; lz[#lz + 1] = ANCHOR
  if not pcall(redis.call, 'ZADD', P .. 'leases', unpack(lz)) then return fail('leases', 'zset') end
  redis.call('MSET', unpack(set))
  if rv then
    redis.call('ZREM', P .. 'running', rv.victim)
    feed('preempt', now, 'id', first.id, 'l', first.lvl, 'victim', rv.victim, 'vl', rv.level, 'w', w,
      'wait', math.max(now - first.ready, 0))
  end
  return nil
end

-- reply returns the call's reply; when nothing was popped its code says
-- in how many ms the earliest scheduled task is due or lease expires.
local function reply()
  if popped > 0 then return out end
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

-- lease is the lease, stage by stage. It is a function, not the file's
-- main chunk, because the stages share the locals above with it: in
-- miniredis's Lua (gopher-lua) an error caught by pcall closes every open
-- upvalue, after which code of the main chunk would read its own stale
-- copy of a local the functions go on writing (TestLeaseAfterCaughtError).
local function lease()
  local err = read_due() or end_acks()
  if err then return err end
  if sweep then
    promote(sch, now, maxl, bad)
    recover(exp, now, bad)
    age(now, age_after, maxl, bad)
  end
  err = check_fleet()
  if err then return err end
  for gi, g in ipairs(groups) do
    local n0 = n
    local want = open_group(g)
    while want > 0 and not stuck do
      local from = #ids + 1
      local levels = choose_levels(g)
      if not pop(levels, from) then break end
      local mk, vals, cps, keep = load_tasks(from)
      admit(g, from, mk, vals, cps, keep)
      if n >= count or stuck or drained then break end
    end
    close_group(gi, g, want, n - n0)
  end
  if n > 0 then
    err = write()
    if err then return err end
  end
  return reply()
end

return lease()
