-- deregister.lua: removes a stopping worker's record (Store.Deregister);
-- its busy count goes too once it holds no lease (else the release of its
-- last lease removes it). It stands alone (no prelude).
--
-- KEYS[1]  alive (ZSET)
-- KEYS[2]  cap (HASH)
-- KEYS[3]  busy (HASH)
-- KEYS[4]  absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  worker ID
--
-- Reply: 1.
--
-- Keys it touches: those declared in KEYS.

local w = ARGV[1]
redis.call('ZREM', KEYS[1], w)
redis.call('HDEL', KEYS[2], w)
if tonumber(redis.call('HGET', KEYS[3], w) or '0') <= 0 then
  redis.call('HDEL', KEYS[3], w)
end
return 1
