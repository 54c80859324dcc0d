-- deregister.lua: removes a stopping worker's record (Store.Deregister);
-- its busy count goes too once it holds no lease (else the release of its
-- last lease removes it). It stands alone (no prelude).
--
-- KEYS[1]  alive (ZSET)
-- ARGV[1]  the key prefix
-- ARGV[2]  worker ID
--
-- Reply: 1.
--
-- Keys it touches. Declared in KEYS: alive. Built from the prefix (not
-- declared): cap, busy (HASHes).

local P, w = ARGV[1], ARGV[2]
redis.call('ZREM', KEYS[1], w)
redis.call('HDEL', P .. 'cap', w)
if tonumber(redis.call('HGET', P .. 'busy', w) or '0') <= 0 then
  redis.call('HDEL', P .. 'busy', w)
end
return 1
