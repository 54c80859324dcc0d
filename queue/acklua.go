package queue

// luaFastAcks is the common case of finishScript: a batch of acks without
// retention. It costs a fixed number of commands whatever the batch size:
// one MGET of the states, one ZSCORE of one member (a read that checks the
// type of leases, written last, so no deadline need be kept for an undo),
// then one write per shared key and counter. Writes are ordered so that the
// first write to each key not yet checked is the one a wrong type would
// fail, and a failure undoes every write before it: a corrupt key changes
// nothing and is reported by name. No clock is read. fast_acks(base, stride, nops)
// reads op i's ID and token at ARGV[base + stride*(i-1) + 1] and + 2; the
// lease script runs it too, for the acks a lease call carries.
const luaFastAcks = `
local function corrupt(suffix, want)
  local k = P .. suffix
  return redis.error_reply('CORRUPT ' .. k .. ' is a ' .. typeof(k) .. ', want a ' .. want)
end

local function fast_acks(base, stride, nops)
  local ids, sk = {}, {}
  for i = 1, nops do ids[i] = ARGV[base + stride * (i - 1) + 1]; sk[i] = P .. 's:' .. ids[i] end
  local raws = redis.call('MGET', unpack(sk))
  -- A read of one member checks the type of leases, written last.
  if not pcall(redis.call, 'ZSCORE', P .. 'leases', ids[1]) then return corrupt('leases', 'zset') end
  local res, rm, busy, acnt, dels, seen = {}, {}, {}, {}, {}, {}
  for i = 1, nops do
    local raw = raws[i]
    -- The state as the lease wrote it for a fresh task (the common case):
    -- one anchored match reads the fields needed, the optional slot pool
    -- after them, into locals (no table). Such a task has no checkpoint: a
    -- save adds cps to the state, and a task that had one has more fields.
    -- The tasks of one lease call at one level share that string (and
    -- Lua strings are interned), so it is matched once per call: seen
    -- keeps what it read.
    local al, w, tk, b, fresh
    local hit = raw and seen[raw]
    if hit then
      al, w, tk, b, fresh = hit[1], hit[2], hit[3], hit[4], true
    elseif raw then
      local e
      al, w, tk, e = string.match(raw, '^{"st":"active","l":"%d+","al":"(%d+)","w":"([^"\\]*)","tk":"([^"\\]*)","stt":"%d+"()')
      if al then
        fresh = true
        if string.byte(raw, e) ~= 125 then
          b = string.match(raw, '^,"b":"(%d+)"}$', e)
          if not b then al, w, tk, fresh = nil, nil, nil, false end
        end
        if fresh then seen[raw] = {al, w, tk, b} end
      end
    end
    if not al and raw then
      local s
      if not string.find(raw, '\\', 1, true) then
        -- No escapes: read the fields needed without a JSON decode.
        s = {tk = string.match(raw, '"tk":"([^"]*)"'), w = string.match(raw, '"w":"([^"]*)"'),
          al = string.match(raw, '"al":"([^"]*)"'), b = string.match(raw, '"b":"([^"]*)"')}
      else
        s = decode(raw)
      end
      if s then tk, w, al, b = s.tk, s.w, s.al, s.b end
    end
    if not raw and typeof(sk[i]) ~= 'none' then
      res[i] = 'CORRUPT ' .. sk[i] .. ' is a ' .. typeof(sk[i]) .. ', want a string'
    elseif not raw or tk ~= ARGV[base + stride * (i - 1) + 2] then
      res[i] = 'L'
    else
      res[i] = 1
      rm[#rm + 1] = ids[i]
      if w then
        busy[w] = (busy[w] or 0) - 1
        if b then busy[w .. '|' .. b] = (busy[w .. '|' .. b] or 0) - 1 end
      end
      if al then acnt[al] = (acnt[al] or 0) - 1 end
      local d = #dels
      dels[d + 1] = P .. 't:' .. ids[i]; dels[d + 2] = sk[i]
      if not fresh then dels[d + 3] = P .. 'c:' .. ids[i] end
    end
  end
  if #rm == 0 then return res end
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
    local ok2 = pcall(redis.call, 'HINCRBY', P .. 'n', 'a' .. l, d)
    if not ok2 then return fail('n', 'hash') end
    undo[#undo + 1] = function() redis.call('HINCRBY', P .. 'n', 'a' .. l, -d) end
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
`
