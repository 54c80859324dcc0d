-- buckets.lua: the rate buckets of counts.lua and rates.lua (see
-- rateBucket, rateBuckets and rateKeep in rates.go, which say how rates
-- are counted). TestLuaConstants checks that these values are rates.go's.
-- defines: RATE_BUCKET_MS RATE_BUCKETS RATE_KEEP_MS
--
-- The counters live in one HASH per bucket of Redis's clock, r:<bucket>
-- (bucket = floor(ms / RATE_BUCKET_MS)), fields <level or P<pool>><kind>
-- (kind d processed, f failed, x preempted, s SLA breaches).

local RATE_BUCKET_MS, RATE_BUCKETS, RATE_KEEP_MS = 10000, 6, 130000
