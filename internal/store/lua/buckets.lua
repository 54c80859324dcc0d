-- buckets.lua: the rate buckets of counts.lua and rates.lua (see
-- rateBucket, rateBuckets and rateKeep in rates.go, which say how rates
-- are counted).
--
-- Generated from those values and rateKinds in rates.go by go generate
-- (TestLuaGenerated in fields_test.go): edit those, not this file.
-- defines: RATE_BUCKET_MS RATE_BUCKETS RATE_KEEP_MS RATE_KINDS
--
-- The counters live in one HASH per bucket of Redis's clock, r:<bucket>
-- (bucket = floor(ms / RATE_BUCKET_MS)), fields <level or P<pool>><kind>,
-- kind one of RATE_KINDS, in the order of a heartbeat's counts.

local RATE_BUCKET_MS, RATE_BUCKETS, RATE_KEEP_MS = 10000, 6, 130000
local RATE_KINDS = {'d', 'f', 'x', 's'} -- processed, failed, preempted, SLA breaches
