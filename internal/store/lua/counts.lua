-- counts.lua: add_counts, which adds a heartbeat's outcome counts to the
-- current rate bucket (see buckets.lua); part of heartbeat.lua.
--
-- uses: prelude.lua buckets.lua
-- defines: add_counts
--
-- add_counts(now, enc, bad): enc is "<level>:d:f:x:s;..." and
-- "P<pool>:d:f:x:s;..." (processed, failed, preempted, SLA breaches; see
-- encodeCounts in rates.go), "" for none. A wrong-typed bucket is reported
-- in bad and skipped.
--
-- Keys it writes, built from P: r:<bucket> (HASH, expires after
-- RATE_KEEP_MS).

local function add_counts(now, enc, bad)
  if enc == '' then return end
  local k = P .. 'r:' .. math.floor(now / RATE_BUCKET_MS)
  local t = typeof(k)
  if t ~= 'none' and t ~= 'hash' then
    bad[#bad + 1] = 'CORRUPT ' .. k .. ' is a ' .. t .. ', want a hash'
    return
  end
  for e in string.gmatch(enc, '[^;]+') do
    local l, d, f, x, s = string.match(e, '^(P?[%w_.-]+):(%d+):(%d+):(%d+):(%d+)$')
    if l then
      if d ~= '0' then redis.call('HINCRBY', k, l .. 'd', d) end
      if f ~= '0' then redis.call('HINCRBY', k, l .. 'f', f) end
      if x ~= '0' then redis.call('HINCRBY', k, l .. 'x', x) end
      if s ~= '0' then redis.call('HINCRBY', k, l .. 's', s) end
    end
  end
  redis.call('PEXPIRE', k, RATE_KEEP_MS)
end
