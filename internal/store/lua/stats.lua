-- stats.lua: reads every counter of a queue in one round trip
-- (Store.Stats): the lists' lengths, the head's ready time, the counters
-- in n, live workers, the paused levels and the rate buckets.
--
-- uses: fields.lua prelude.lua buckets.lua rates.lua
--
-- KEYS     n (HASH; KEYS[1]), alive (ZSET), paused (STRING), p:0..p:<max
--          level> (LISTs), then
--          absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  the number of levels
-- ARGV[3]  now in ms, or "" for Redis's clock
--
-- Reply: per level {pending, active, scheduled, dead, ready ms of the
-- head (0: empty), canceled}, then the live workers, the paused key's value ("" for
-- none) and read_rates' {field, total, ...}; an error reply (CORRUPT ...)
-- when n or alive holds another type.
--
-- Keys it touches: those declared in KEYS (it builds the same names from
-- P), and keys it finds as it runs (safe because absent is declared):
-- t:<id>, s:<id> of each head (STRINGs), the rate buckets r:<bucket>
-- (HASHes).

local n, now = tonumber(ARGV[2]), clock(ARGV[3])
local g = guard('n', 'hash', 'alive', 'zset')
if g then return redis.error_reply(g) end
local out = {}
for l = 0, n - 1 do
  local key = P .. 'p:' .. l
  local len, rdy = 0, 0
  local t = typeof(key)
  if t == 'list' then
    len = redis.call('LLEN', key)
    local head = redis.call('LINDEX', key, 0)
    if head then
      local s = decode(redis.call('GET', skey(head))) or {}
      local h = hdr_of(head) or {}
      rdy = num(s[F_READY_AT] or h.enq)
    end
  elseif t ~= 'none' then
    len = 0 -- a wrong-typed list: nothing pending there can be leased
  end
  local a, s, d, x = unpack(redis.call('HMGET', KEYS[1], C_ACTIVE .. l, C_SCHEDULED .. l, C_DEAD .. l, C_CANCELED .. l))
  out[#out + 1] = {len, num(a), num(s), num(d), rdy, num(x)}
end
out[#out + 1] = redis.call('ZCOUNT', P .. 'alive', now, '+inf')
local okp, paused = pcall(redis.call, 'GET', P .. 'paused')
out[#out + 1] = (okp and paused) or ''
out[#out + 1] = read_rates(now)
return out
