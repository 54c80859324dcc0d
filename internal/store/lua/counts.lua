-- counts.lua: add_counts, which adds a heartbeat's outcome counts to the
-- current rate bucket (see buckets.lua); part of heartbeat.lua.
--
-- uses: fields.lua prelude.lua buckets.lua
-- defines: add_kinds add_counts
--
-- add_counts(now, counts, bad): counts is the heartbeat's counts option, a
-- table "<level>" or "P<pool>" -> {processed, failed, preempted, SLA
-- breaches} (see encodeCounts in rates.go), nil for none. A wrong-typed
-- bucket is reported in bad and skipped.
--
-- Keys it writes, built from P: r:<bucket> (HASH, expires after
-- RATE_KEEP_MS).

-- add_kinds adds to bucket k the counts c of level or pool l.
local function add_kinds(k, l, c)
  for i, kind in ipairs(RATE_KINDS) do
    local v = tonumber(c[i])
    if v and v > 0 then redis.call('HINCRBY', k, l .. kind, math.floor(v)) end
  end
end

local function add_counts(now, counts, bad)
  if not counts or next(counts) == nil then return end
  local k = P .. 'r:' .. math.floor(now / RATE_BUCKET_MS)
  local t = typeof(k)
  if t ~= 'none' and t ~= 'hash' then
    bad[#bad + 1] = 'CORRUPT ' .. k .. ' is a ' .. t .. ', want a hash'
    return
  end
  for l, c in pairs(counts) do
    if type(c) == 'table' and string.match(l, '^P?[%w_.-]+$') then add_kinds(k, l, c) end
  end
  redis.call('PEXPIRE', k, RATE_KEEP_MS)
end
