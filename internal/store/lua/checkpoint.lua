-- checkpoint.lua: saves checkpoint bytes under a valid lease and extends
-- the lease, since saving is a sign of life (Store.SaveCheckpoint).
--
-- uses: fields.lua prelude.lua
--
-- KEYS[1]  the task's state s:<id> (STRING)
-- KEYS[2]  its checkpoint c:<id> (STRING)
-- KEYS[3]  leases (ZSET)
-- KEYS[4]  absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  id
-- ARGV[3]  lease token
-- ARGV[4]  checkpoint bytes
-- ARGV[5]  now in ms, or "" for Redis's clock
-- ARGV[6]  lease duration in ms
--
-- Reply: the new checkpoint sequence, or the error reply LEASE_LOST
-- (leaseLostMsg in lua.go) when the token does not match, or CORRUPT ...
--
-- Keys it touches: those declared in KEYS (it builds the same names from
-- P).

local id = ARGV[2]
local s, e = sget(id)
if not s then return redis.error_reply(e) end
if s[F_TOKEN] ~= ARGV[3] then return redis.error_reply('LEASE_LOST') end
local g = guard('leases', 'zset')
if g then return redis.error_reply(g) end
local now = clock(ARGV[5])
local seq = num(s[F_CHECKPOINT_SEQ]) + 1
s[F_CHECKPOINT_SEQ] = tostring(seq)
redis.call('SET', ckey(id), ARGV[4])
sput(id, s)
redis.call('ZADD', P .. 'leases', 'XX', now + tonumber(ARGV[6]), id)
return seq
