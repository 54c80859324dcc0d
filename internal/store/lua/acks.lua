-- acks.lua: fast_acks, the common case of finish.lua (a batch of acks
-- without retention), run by the lease script too for the acks a lease
-- call carries.
--
-- uses: fields.lua prelude.lua
-- defines: BYTE_RBRACE FRESH FRESH_POOL corrupt fresh_entry lease_fields fast_acks
--
-- fast_acks(base, stride, nops) reads op i's ID and token at
-- ARGV[base + stride*(i-1) + 1] and + 2, and its keys t:<id>, s:<id>,
-- c:<id> in KEYS, where every script that uses it declares them: the
-- 3*nops keys before the last (absent). It returns one result per op:
-- 1, "L" (lease lost) or a CORRUPT message; or an error reply (a table
-- with err) when a shared key holds another type, after undoing its
-- writes. corrupt(suffix, want) is that error reply for key P .. suffix.
--
-- It costs a fixed number of commands whatever the batch size: one MGET of
-- the states, one ZSCORE of one member (a read that checks the type of
-- leases, written last, so no deadline need be kept for an undo), then one
-- write per shared key and counter. Writes are ordered so that the first
-- write to each key not yet checked is the one a wrong type would fail,
-- and a failure undoes every write before it: a corrupt key changes
-- nothing and is reported by name. No clock is read.
--
-- Keys it touches, all declared by the scripts that use it: s:<id> (read),
-- t:, s:, c:<id> (deleted), taken from KEYS; leases, running (ZSETs),
-- busy, n (HASHes), alive (read), built from P.

local BYTE_RBRACE = 125 -- '}': the end of a fresh task's state

-- The patterns of a fresh task's state as the lease writes it (see
-- fresh_state in lease.lua): its fields up to the lease's start, then the
-- slot pool, if any, after them. A state with a cancel request (F_CANCEL,
-- see cancel.lua) never matches, wherever cjson put that field: it takes
-- the slow path, and an ack ends it done all the same.
local FRESH = '^{"' .. F_STATE .. '":"active","' .. F_LEVEL .. '":"%d+","' .. F_LEASED_LEVEL .. '":"(%d+)","' ..
  F_WORKER .. '":"([^"\\]*)","' .. F_TOKEN .. '":"([^"\\]*)","' .. F_LEASED_AT .. '":"%d+"()'
local FRESH_POOL = '^,"' .. F_POOL .. '":"(%d+)"}$'

local function corrupt(suffix, want)
  local k = P .. suffix
  return redis.error_reply('CORRUPT ' .. k .. ' is a ' .. typeof(k) .. ', want a ' .. want)
end

-- fresh_entry reads a state as the lease wrote it for a fresh task (the
-- common case): one anchored match reads the fields needed, the optional
-- slot pool after them. Such a task has no checkpoint: a save adds cps to
-- the state, and a task that had one has more fields. It returns {al, w,
-- tk, b, 0} (the last: how many acks end such a lease), or nil for any
-- other state.
local function fresh_entry(raw)
  local al, w, tk, e = string.match(raw, FRESH)
  if not al then return nil end
  if string.byte(raw, e) == BYTE_RBRACE then return {al, w, tk, nil, 0} end
  local b = string.match(raw, FRESH_POOL, e)
  if not b then return nil end
  return {al, w, tk, b, 0}
end

-- lease_fields reads any other state's token, worker, leased level and
-- slot pool; nil when it is not a JSON object.
local function lease_fields(raw)
  local s
  if not string.find(raw, '\\', 1, true) then
    -- No escapes: read the fields needed without a JSON decode.
    local function field(k) return string.match(raw, '"' .. k .. '":"([^"]*)"') end
    s = {[F_TOKEN] = field(F_TOKEN), [F_WORKER] = field(F_WORKER), [F_LEASED_LEVEL] = field(F_LEASED_LEVEL),
      [F_POOL] = field(F_POOL)}
  else
    s = decode(raw)
  end
  if s then return s[F_TOKEN], s[F_WORKER], s[F_LEASED_LEVEL], s[F_POOL] end
  return nil
end

local function fast_acks(base, stride, nops)
  local ids, sk = {}, {}
  local kb = #KEYS - 1 - 3 * nops -- KEYS[kb + 3i - 2 .. kb + 3i]: op i's t:, s:, c:
  for i = 1, nops do ids[i] = ARGV[base + stride * (i - 1) + 1]; sk[i] = KEYS[kb + 3 * i - 1] end
  local raws = redis.call('MGET', unpack(sk))
  -- A read of one member checks the type of leases, written last.
  if not pcall(redis.call, 'ZSCORE', P .. 'leases', ids[1]) then return corrupt('leases', 'zset') end
  local res, rm, busy, acnt, dels, seen = {}, {}, {}, {}, {}, {}
  local nrm, nd, ended = 0, 0, {}
  -- unwind counts k ended leases of worker w (slot pool b) at level al.
  local function unwind(w, b, al, k)
    if w then
      busy[w] = (busy[w] or 0) - k
      if b then busy[w .. '|' .. b] = (busy[w .. '|' .. b] or 0) - k end
    end
    if al then acnt[al] = (acnt[al] or 0) - k end
  end
  for i = 1, nops do
    local raw = raws[i]
    -- The tasks of one lease call at one level share their fresh state
    -- (and Lua strings are interned), so it is matched once per call:
    -- seen keeps what fresh_entry read, and how many acks it ends (their
    -- counts are settled once, after the loop).
    local ent = raw and seen[raw]
    if raw and not ent then
      ent = fresh_entry(raw)
      seen[raw] = ent
    end
    local al, w, tk, b
    if ent then
      al, w, tk, b = ent[1], ent[2], ent[3], ent[4]
    elseif raw then
      tk, w, al, b = lease_fields(raw)
    end
    if not raw and typeof(sk[i]) ~= 'none' then
      res[i] = 'CORRUPT ' .. sk[i] .. ' is a ' .. typeof(sk[i]) .. ', want a string'
    elseif not raw or tk ~= ARGV[base + stride * (i - 1) + 2] or ended[ids[i]] then
      res[i] = 'L' -- (a second ack of one lease in a batch: the first ended it)
    else
      ended[ids[i]] = true
      res[i] = 1
      nrm = nrm + 1
      rm[nrm] = ids[i]
      if ent then ent[5] = ent[5] + 1 else unwind(w, b, al, 1) end
      dels[nd + 1] = KEYS[kb + 3 * i - 2]; dels[nd + 2] = sk[i]; nd = nd + 2
      if not ent then nd = nd + 1; dels[nd] = KEYS[kb + 3 * i] end
    end
  end
  if nrm == 0 then return res end
  for _, e in pairs(seen) do
    if e[5] > 0 then unwind(e[2], e[4], e[1], e[5]) end
  end
  local undo = {}
  local function fail(suffix, want)
    for j = #undo, 1, -1 do undo[j]() end
    return corrupt(suffix, want)
  end
  local left = {}
  for w, d in pairs(busy) do
    local ok2, n = pcall(redis.call, 'HINCRBY', P .. 'busy', w, d)
    if not ok2 then return fail('busy', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'busy', w, -d) end
    if n <= 0 then left[#left + 1] = w end
  end
  for l, d in pairs(acnt) do
    local ok2 = pcall(redis.call, 'HINCRBY', P .. 'n', C_ACTIVE .. l, d)
    if not ok2 then return fail('n', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'n', C_ACTIVE .. l, -d) end
  end
  local ok3 = pcall(redis.call, 'ZREM', P .. 'running', unpack(rm))
  if not ok3 then return fail('running', 'zset') end
  redis.call('ZREM', P .. 'leases', unpack(rm)) -- its type was checked: cannot fail
  redis.call('DEL', unpack(dels))
  -- A departed worker's last lease takes its busy field with it; a slot
  -- pool's count ("worker|pool") goes at zero.
  for _, w in ipairs(left) do
    local pw = string.match(w, '^(.*)|%d+$')
    if pw and busy[pw] then
      redis.call('HDEL', P .. 'busy', w)
    else
      local ok4, alive = pcall(redis.call, 'ZSCORE', P .. 'alive', w)
      if ok4 and not alive then redis.call('HDEL', P .. 'busy', w) end
    end
  end
  return res
end
