-- rates.lua: read_rates, which sums the last RATE_BUCKETS complete rate
-- buckets (see buckets.lua); part of stats.lua.
--
-- uses: fields.lua prelude.lua buckets.lua
-- defines: read_rates
--
-- read_rates(now) returns {field, total, ...} over the buckets (parseRates
-- in rates.go reads it). A wrong-typed bucket is skipped.
--
-- Keys it reads, built from P: r:<bucket> (HASHes).

local function read_rates(now)
  local b = math.floor(now / RATE_BUCKET_MS)
  local sum, out = {}, {}
  for i = b - RATE_BUCKETS, b - 1 do
    local ok, kv = pcall(redis.call, 'HGETALL', P .. 'r:' .. i)
    if ok then
      for j = 1, #kv, 2 do sum[kv[j]] = (sum[kv[j]] or 0) + tonumber(kv[j + 1]) end
    end
  end
  for f, v in pairs(sum) do out[#out + 1] = f; out[#out + 1] = v end
  return out
end
