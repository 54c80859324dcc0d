-- workers.lua: reads the live workers with their capacity and busy counts
-- in one round trip (Store.Workers).
--
-- uses: fields.lua prelude.lua
--
-- KEYS[1]  alive (ZSET)
-- KEYS[2]  cap (HASH)
-- KEYS[3]  busy (HASH)
-- KEYS[4]  absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3]  max workers
--
-- Reply: per live worker {id, alive-until ms, its cap field
-- ("<capacity>@<heartbeat ms>[@<slot pools>]", see heartbeat.lua), busy,
-- then busy per slot pool, in the layout's order}; an error reply
-- (CORRUPT ...) when a fleet key holds another type.
--
-- Keys it touches: those declared in KEYS (it builds the same names from
-- P).

local g = guard('alive', 'zset', 'cap', 'hash', 'busy', 'hash')
if g then return redis.error_reply(g) end
local now = clock(ARGV[2])
local live = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i = 1, #live, 2 do
  local w = live[i]
  local c = redis.call('HGET', P .. 'cap', w) or ''
  local row = {w, live[i + 1], c, redis.call('HGET', P .. 'busy', w) or '0'}
  local lay = string.match(c, '^[^@]*@[^@]*@(.+)$')
  if lay then
    for bd in string.gmatch(lay, '(%d+):%d+:[%d,]*:%d') do
      row[#row + 1] = redis.call('HGET', P .. 'busy', w .. '|' .. bd) or '0'
    end
  end
  out[#out + 1] = row
end
return out
