-- lease.lua: the lease call (Store.Lease, Store.Reserve). It ends the
-- leases of the acks it carries, promotes due scheduled tasks, recovers
-- expired leases, ages long-waiting tasks up a level (Config.AgeAfter),
-- then leases up to count tasks, highest level first, FIFO within a level, with
-- one LMPOP per run of levels, one MGET for every task's keys and one write
-- per shared key, whatever the count. In a reservation (for preemption)
-- it first checks the fleet (see fleet.lua).
--
-- The whole lease is these files, in this order, then this one:
-- uses: fields.lua prelude.lua anchor.lua acks.lua fleet.lua view.lua
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
--            ret      retention in ms (Config.Retention) of the tasks
--                     recovery ends canceled [0]
--            groups   LeaseRequest.Groups, an array of {count, levels (an
--                     array, highest first), pool (the slot pool its tasks
--                     hold, a string) [none], spare (true: it takes what
--                     earlier counted groups left, and count is ignored)
--                     [false], resumed (true: only tasks at the head of
--                     its level that ran before, up to count: a sharded
--                     lease's resumed heads, ran_heads in view.lua)
--                     [false]} [one group of count tasks from max level
--                     down to min]
--            by       ms: lease nothing when now is later (the second
--                     step of a lease on a queue of several shards, see
--                     shards_lease.go); it still sweeps and ends the acks
--                     [none]
--            view     true: the reply's seventh entry is the shard's view
--                     after the call (shard_view, view.lua), and the tasks
--                     follow it (a lease on a queue of several shards)
--                     [false]
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
-- none) per task leased}, with the view before the tasks when asked. A
-- corrupt entry is a CORRUPT message, or {id, level, message} for a task
-- set aside (its record key held another type: renamed x:<id>, the task
-- dead-lettered at the level it was popped from). code is the ms until
-- the earliest scheduled task is due or lease expires when nothing was
-- popped (0: none), or -1 / -2 alone when a reservation is refused (a free
-- slot / a lower victim elsewhere), or an error reply (CORRUPT ...) when a
-- shared key holds another type.
--
-- Keys it touches: those declared in KEYS, and keys of tasks it finds as it
-- runs, which no caller can name: t:<id>, s:<id>, c:<id> (STRINGs; x:<id>,
-- xs:<id> when set aside) of the tasks it pops, promotes or recovers; the
-- channel wake. They are safe because absent is declared: the script runs
-- only while the slot does not move, and then every key of it is local.

-- The stages, in the order the main body (at the end) calls them:
-- read_due and end_acks, then prelude.lua's promote, recover and age (the
-- sweep), the fleet check of a reservation, then per group of levels,
-- while it wants tasks: choose_levels, pop, load_tasks, admit; then write
-- and reply. They share the call, c below: its inputs and what it has
-- gathered so far. One table rather than locals the stages would
-- capture: creating a closure costs a walk of the open upvalues per
-- upvalue it takes, on every call of the script; and in miniredis's Lua
-- (gopher-lua) an error caught by pcall closes every open upvalue, after
-- which the main body would read its own stale copy of a local the stages
-- go on writing (TestLeaseAfterCaughtError). Each function is made anew
-- on every call of the script (about 3,000 instructions each, measured
-- under callgrind), so there are no more of them than the steps need.

-- The bytes prb0 reads in a record's header, "2|<level>|<preemptible>|".
local BYTE_TWO, BYTE_BAR, BYTE_ZERO = 50, 124, 48 -- '2', '|', '0'

-- c is the call, read from ARGV in the block below and made whole at
-- once (a table grown field by field would be rehashed as it grows). Its
-- fields:
--   now, deadline (ms), worker, tok (the token), maxl (the top level),
--   rv (the reserve option, false unless a reservation), minl (the lowest
--   level of the default group), skip (a set), groups, age_after (ms);
--   count: how many tasks the call wants so far (the groups up to the
--   current one);
--   bad: corruption found (the reply's fourth entry); sweep: whether to
--   promote, recover and age, sch and exp the due scheduled IDs and the
--   expired leases read for it; nf: when they found none, the earliest
--   due time or deadline they saw (0: none), for the reply; taken: per group, how many it took;
--   out: the reply;
--   per task leased: set (its state key and state, for MSET), lz
--   (deadline and ID, for ZADD leases), rz (level and ID, for ZADD
--   running); per level acnt (how many leased), per slot pool bcnt;
--   leased[i]: ids[i] was leased; ns, nr, no: the lengths of set, rz and
--   out, kept by hand (# costs a search per append in Lua 5.1);
--   ids, lvls: every ID popped and the level it came from, in order;
--   n: tasks leased; popped: IDs popped; stuck: a task was found nowhere
--   safe to go, the call takes no more; drained: the last pop found fewer
--   than it asked; first: the first task leased (the urgent one of a
--   reservation);
--   broken: levels found wrong-typed or paused (not popped again); mine:
--   the IDs taken;
--   nows, dls, LS: now, the deadline and each level as strings;
--   JS_W: the end of a fresh task's state, the same for every task of the
--   call, which shares its token (a lease is the pair of ID and token),
--   so a fresh task's state is the same string for every task of a level
--   (and slot pool): joined once per call, in JS1, and found again by the
--   ack (see fast_acks) without parsing it;
--   spare: what the counted groups so far left untaken, lend their slot
--   pools and the slots each left (a task leased by a counted group holds
--   a slot of that group's pool; one leased by a spare group a slot the
--   counted groups left free, the first in their order, as the runtime
--   assigns them), lend_i the first with slots left;
--   undo: what write must undo when a later write fails, in order.
local c
do
  local now = clock(ARGV[2])
  local deadline, worker, tok, maxl = now + tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
  local opt = cjson.decode(ARGV[8])
  local rv = opt.reserve -- nil unless a reservation
  local count, minl = opt.count or 1, opt.min or 0
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
  if opt.by and now > opt.by then groups = {} end
  -- Numbers turned into strings once per call, not once per task (each
  -- conversion is a sprintf); a plain worker ID is quoted without cjson.
  local nows, LS = tostring(now), {}
  for l = 0, maxl do LS[l] = tostring(l) end
  local wj = '"' .. worker .. '"'
  if string.find(worker, '[%c"\\/]') then wj = cjson.encode(worker) end
  local bad, taken = {}, {}
  c = {
    now = now, deadline = deadline, worker = worker, tok = tok, maxl = maxl, rv = rv or false, minl = minl,
    skip = skip, groups = groups, age_after = opt.age or 0, count = count, ret = opt.ret or 0,
    bad = bad, sweep = false, sch = false, exp = false, nf = false, taken = taken,
    out = {0, now, deadline, bad, taken, {}}, vw = opt.view and not rv,
    set = {}, lz = {}, rz = {}, acnt = {}, bcnt = {}, leased = {}, ns = 0, nr = 0, no = 6,
    ids = {}, lvls = {}, n = 0, popped = 0, stuck = false, drained = false, first = false,
    broken = {}, mine = {},
    nows = nows, dls = tostring(deadline), LS = LS,
    JS_W = '","' .. F_WORKER .. '":' .. wj .. ',"' .. F_TOKEN .. '":"' .. tok .. '","' .. F_LEASED_AT .. '":"' .. nows .. '"',
    JS1 = {},
    spare = 0, lend = {}, lend_i = 1,
    undo = {},
  }
  if c.vw then c.out[7], c.no = {}, 7 end -- the view's place, filled by reply; the tasks after it
end


-- read_due makes the sweep's reads and checks, which come first: a
-- wrong-typed key fails the call before anything is written.
local function read_due()
  if ARGV[7] ~= '1' then return nil end
  local sch, exp, e, nf = due_reads(c.now, c.bad)
  if e then return redis.error_reply(e) end
  c.sch, c.exp = sch, exp
  if #sch == 0 and #exp == 0 then c.nf = nf end
  c.sweep = #sch > 0 or #exp > 0 or c.age_after > 0
  local g = c.sweep and (shared() or guard('scheduled', 'zset'))
  if g then return redis.error_reply(g) end
  return nil
end

-- end_acks ends the leases of the acks this call carries (ARGV[9..]: id,
-- token) before the sweep recovers expired ones, which would take back a
-- lease that expired while its ack could not land (the slot migrating,
-- say; an acked ID read as expired has no state left, and recover skips
-- it), and before new leases count, so their slots' counts are settled.
local function end_acks()
  if #ARGV <= 8 or c.rv then return nil end
  local acked = fast_acks(8, 2, (#ARGV - 8) / 2)
  if acked.err then return acked end
  c.out[6] = acked
  return nil
end

-- close_group records that group gi (g, wanting want) took got tasks,
-- and what it leaves to the spare groups after it.
local function close_group(gi, g, want, got)
  c.taken[gi] = got
  if g.spare then
    c.spare = c.spare - got
    return
  end
  c.spare = c.spare + want - got
  if g.pool then c.lend[#c.lend + 1] = {bd = g.pool, left = want - got} end
end

-- choose_levels returns group g's levels to pop from, highest first: not
-- those skipped, nor those found wrong-typed or paused.
local function choose_levels(g)
  local levels, broken, skip = {}, c.broken, c.skip
  for _, lvl in ipairs(g.levels) do
    if not broken[lvl] and not skip[lvl] then levels[#levels + 1] = lvl end
  end
  return levels
end

-- pop_each pops from levels[at..] one LPOP per level, after an LMPOP
-- failed on a wrong-typed list: each fails without writing, so the bad
-- list is found, reported and skipped, and the others still give.
local function pop_each(levels, at, from)
  local ids, lvls = c.ids, c.lvls
  for j = at, #levels do
    local lvl, key = levels[j], P .. 'p:' .. levels[j]
    if #ids - from + 1 + c.n >= c.count then break end
    local ok, got = pcall(redis.call, 'LPOP', key, c.count - c.n - (#ids - from + 1))
    if not ok then
      c.broken[lvl] = true
      c.bad[#c.bad + 1] = 'CORRUPT ' .. key .. ' is a ' .. typeof(key) .. ', want a list'
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
  local ids, lvls, n, count = c.ids, c.lvls, c.n, c.count
  local at = 1
  local ask = count - n
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
  c.drained = #ids - from + 1 < ask
  c.popped = #ids
  return true
end

-- load_tasks reads what the IDs popped from index from on need: one MGET
-- of their records and states, with the paused key riding along (no
-- extra command), then one of the checkpoints, read only for tasks with a
-- state: a fresh task (the common case) has none, since a save needs a
-- lease, which writes one. It returns the keys read (t:, s: per task),
-- their values, the checkpoints by index and the indexes of the tasks to
-- admit.
local function load_tasks(from)
  local ids = c.ids
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
  -- IDs popped from a level paused while this worker did not know yet
  -- (pz, the paused key's value) go back, untouched, and that level is
  -- skipped from then on. An ID twice in the lists (a record deleted
  -- behind its list's back, then enqueued again) is one task: one lease,
  -- the other entry dropped as stale (two copies would share the call's
  -- token).
  local pz, lvls, mine, held, keep = vals[#vals], c.lvls, c.mine, {}, {}
  for i = #ids, from, -1 do
    if paused_at(pz, lvls[i]) then
      redis.call('LPUSH', P .. 'p:' .. lvls[i], ids[i]); held[i] = true; c.broken[lvls[i]] = true
    end
  end
  for i = from, #ids do
    if not held[i] and not mine[ids[i]] then mine[ids[i]] = true; keep[#keep + 1] = i end
  end
  return mk, vals, cps, keep
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
    c.bad[#c.bad + 1] = gd
    c.stuck = true
  elseif t ~= 'none' then
    set_aside(id, c.now, 'corrupt record: ' .. tkey(id) .. ' is a ' .. t .. ', want a string', ls)
    c.bad[#c.bad + 1] = {id, ls, 'CORRUPT ' .. tkey(id) .. ' is a ' .. t ..
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
    c.bad[#c.bad + 1] = 'CORRUPT ' .. skey(id) .. ' was not a string (set aside as xs:' .. id .. ')'
  end
  return {}
end

-- slot_band returns the slot pool a task leased by group g holds.
local function slot_band(g)
  if not g.spare then return g.pool end
  local lend = c.lend
  while c.lend_i <= #lend and lend[c.lend_i].left <= 0 do c.lend_i = c.lend_i + 1 end
  if c.lend_i > #lend then return nil end
  lend[c.lend_i].left = lend[c.lend_i].left - 1
  return lend[c.lend_i].bd
end

-- fresh_state returns the state of a fresh task leased at level ls
-- holding slot pool band (nil: none), the string written by hand and kept
-- in JS1 under jk.
local function fresh_state(jk, ls, band)
  local js = '{"' .. F_STATE .. '":"active","' .. F_LEVEL .. '":"' .. ls .. '","' .. F_LEASED_LEVEL .. '":"' .. ls .. c.JS_W
  if band then js = js .. ',"' .. F_POOL .. '":"' .. band .. '"}' else js = js .. '}' end
  c.JS1[jk] = js
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
-- state, checkpoint) is appended to out. The call's fields it uses per
-- task are read into locals once, and its counts written back at the end.
local function admit(g, from, mk, vals, cps, keep)
  local ids, lvls, LS, JS1, EMPTY, maxl = c.ids, c.lvls, c.LS, c.JS1, {}, c.maxl
  local set, lz, rz, acnt, bcnt, leased, out = c.set, c.lz, c.rz, c.acnt, c.bcnt, c.leased, c.out
  local w, tok, nows, dls = c.worker, c.tok, c.nows, c.dls
  local n, ns, nr, no = c.n, c.ns, c.nr, c.no
  for k = 1, #keep do
    local i = keep[k]
    local id, lvl = ids[i], lvls[i]
    local ls = LS[lvl] or tostring(lvl)
    local j = 2 * (i - from)
    local rec, raw = vals[j + 1], vals[j + 2]
    if not rec then
      drop(id, lvl, ls, raw)
    else
      local s = EMPTY -- the state of a fresh task, never written to
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
        s[F_STATE], s[F_LEVEL], s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL], s[F_POOL] =
          'active', ls, w, tok, nows, ls, band
        js = cjson.encode(s)
      end
      set[ns + 1] = mk[j + 2]; set[ns + 2] = js; ns = ns + 2
      lz[ns - 1] = dls; lz[ns] = id
      -- The fleet looks in running for victims below an urgent task:
      -- the top level is below none, so its tasks are left out.
      if lvl < maxl and not prb0(rec) then rz[nr + 1] = ls; rz[nr + 2] = id; nr = nr + 2 end
      if n == 1 then
        local h = header(rec)
        c.first = {id = id, lvl = lvl, ready = num(s[F_READY_AT] or (h and h.enq))}
      end
      -- A preempted task resumes: the preemption feed says where.
      if raw and num(s[F_PREEMPTIONS]) > 0 then
        feed('resumed', c.now, 'id', id, 'l', lvl, 'w', w, 'pre', s[F_PREEMPTIONS], 'cps', s[F_CHECKPOINT_SEQ] or '0')
      end
      acnt[lvl] = (acnt[lvl] or 0) + 1
      leased[i] = true
      out[no + 1] = id; out[no + 2] = rec; out[no + 3] = js; out[no + 4] = cps[i] or false; no = no + 4
    end
  end
  c.n, c.ns, c.nr, c.no = n, ns, nr, no
end

-- fail undoes what write did (the IDs go back to the heads of their
-- lists) and returns the CORRUPT error naming key P .. suffix.
local function fail(suffix, want)
  for j = #c.undo, 1, -1 do c.undo[j]() end
  local k = P .. suffix
  return redis.error_reply('CORRUPT ' .. k .. ' is a ' .. typeof(k) .. ', want a ' .. want)
end

-- unpop puts the leased IDs back at the heads of their lists.
local function unpop()
  for i = #c.ids, 1, -1 do
    if c.leased[i] then redis.call('LPUSH', P .. 'p:' .. c.lvls[i], c.ids[i]) end
  end
end

-- unrun takes the leased IDs out of running.
local function unrun()
  local rm = {}
  for i = 1, #c.ids do
    if c.leased[i] then rm[#rm + 1] = c.ids[i] end
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
  local undo, w, n, rv = c.undo, c.worker, c.n, c.rv
  undo[1] = unpop
  if rv and rv.ignore_fleet and guard('running', 'zset') then return fail('running', 'zset') end
  if not pcall(redis.call, 'HINCRBY', P .. 'busy', w, n) then return fail('busy', 'hash') end
  undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'busy', w, -n) end
  for b, k in pairs(c.bcnt) do
    redis.call('HINCRBY', P .. 'busy', w .. '|' .. b, k)
    undo[#undo + 1] = function() band_release(w, b, -k) end
  end
  for l, k in pairs(c.acnt) do
    if not pcall(redis.call, 'HINCRBY', P .. 'n', C_ACTIVE .. l, k) then return fail('n', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'n', C_ACTIVE .. l, -k) end
  end
  local rz, lz = c.rz, c.lz
  if #rz > 0 then
    rz[#rz + 1] = ANCHOR_SCORE; rz[#rz + 1] = ANCHOR -- keeps the set a skiplist (anchor.go)
    if not pcall(redis.call, 'ZADD', P .. 'running', unpack(rz)) then return fail('running', 'zset') end
    undo[#undo + 1] = unrun
  end
  lz[#lz + 1] = ANCHOR_SCORE; lz[#lz + 1] = ANCHOR
  if not pcall(redis.call, 'ZADD', P .. 'leases', unpack(lz)) then return fail('leases', 'zset') end
  redis.call('MSET', unpack(c.set))
  if rv then
    redis.call('ZREM', P .. 'running', rv.victim)
    feed('preempt', c.now, 'id', c.first.id, 'l', c.first.lvl, 'victim', rv.victim, 'vl', rv.level, 'w', w,
      'wait', math.max(c.now - c.first.ready, 0))
  end
  return nil
end

-- reply returns the call's reply; when nothing was popped its code says
-- in how many ms the earliest scheduled task is due or lease expires.
local function reply()
  local out = c.out
  if c.vw then out[7] = shard_view({}, P, c.maxl) end
  if c.popped > 0 then return out end
  if c.nf then -- the sweep's reads, when they found nothing due
    if c.nf > 0 then out[1] = math.max(c.nf - c.now, 1) end
    return out
  end
  local ok1, s = pcall(redis.call, 'ZRANGE', P .. 'scheduled', 0, 0, 'WITHSCORES')
  local ok2, l = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'leases', '-inf', BELOW_ANCHOR, 'WITHSCORES', 'LIMIT', 0, 1)
  if not ok1 then s = {} end
  if not ok2 then l = {} end
  local due = 0
  if s[2] then due = tonumber(s[2]) end
  if l[2] and (due == 0 or tonumber(l[2]) < due) then due = tonumber(l[2]) end
  if due > 0 then out[1] = math.max(due - c.now, 1) end
  return out
end

-- group_want returns how many tasks group g asks for: a spare group what
-- the counted groups left; a group of resumed heads only as many as are
-- still resumed heads at its level's head (another worker may have taken
-- those the view counted, and a fresh task may not pass another shard's
-- resumed head in their place).
local function group_want(g)
  local want = g.spare and c.spare or g.count
  if not g.resumed then return want end
  local lv = choose_levels(g)[1]
  if not lv then return 0 end
  local ok, ran = pcall(ran_heads, P, P .. 'p:' .. lv, want)
  return ok and math.min(want, ran) or 0
end

-- The lease, stage by stage.
local err = read_due() or end_acks()
if err then return err end
if c.sweep then
  promote(c.sch, c.now, c.maxl, c.bad)
  recover(c.exp, c.now, c.bad, c.ret)
  age(c.now, c.age_after, c.maxl, c.bad)
end
-- A reservation is refused when the fleet has a better place for the
-- urgent task (see fleet.lua), unless told to skip the check.
if c.rv and not c.rv.ignore_fleet then err = fleet_refuses(c.now, c.worker, c.minl, c.maxl, c.rv, c.skip) end
if err then return err end
for gi, g in ipairs(c.groups) do
  local n0 = c.n
  local want = group_want(g)
  c.count = c.n + want
  while want > 0 and not c.stuck do
    local from = #c.ids + 1
    local levels = choose_levels(g)
    if not pop(levels, from) then break end
    local mk, vals, cps, keep = load_tasks(from)
    admit(g, from, mk, vals, cps, keep)
    if c.n >= c.count or c.stuck or c.drained then break end
  end
  close_group(gi, g, want, c.n - n0)
end
if c.n > 0 then
  err = write()
  if err then return err end
end
return reply()
