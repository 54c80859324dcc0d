-- rejoin.lua: puts a running task back in the fleet's running set after a
-- reservation named it as the victim (which takes it out) but the caller
-- did not preempt it after all (Store.Rejoin). Fenced by the lease token.
--
-- uses: fields.lua prelude.lua
--
-- KEYS[1]  the task's state s:<id> (STRING)
-- KEYS[2]  its record t:<id> (STRING, read)
-- KEYS[3]  running (ZSET)
-- KEYS[4]  absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  id
-- ARGV[3]  lease token
-- ARGV[4]  the top level (whose tasks the set leaves out: none is below it)
--
-- Reply: 1 if the task is in the running set again, else 0.
--
-- Keys it touches: those declared in KEYS (it builds the same names from
-- P).

local s = sget(ARGV[2])
local al = s and tonumber(s[F_LEASED_LEVEL])
if not s or s[F_TOKEN] ~= ARGV[3] or not al or al >= tonumber(ARGV[4]) then return 0 end
local h = hdr_of(ARGV[2])
if (h and h.prb == '0') or guard('running', 'zset') then return 0 end
redis.call('ZADD', P .. 'running', s[F_LEASED_LEVEL], ARGV[2])
return 1
