-- pause.lua: rewrites the set of paused levels (Store.Pause, Resume), kept
-- in one string key (",<level>:<w|p>,...", absent when nothing is paused,
-- so that a worker reads it for free with the schema version in its
-- heartbeat), and tells every worker at once on the wake channel ("p" and
-- the new value, which the worker applies without another read; a resumed
-- level is also announced so idle workers lease from it).
--
-- uses: fields.lua prelude.lua
--
-- KEYS[1]  paused (STRING)
-- KEYS[2]  absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  first level
-- ARGV[3]  last level
-- ARGV[4]  mode: "w" (wait), "p" (preempt) or "" to resume
--
-- Reply: the new value of paused; an error reply (CORRUPT ...) when it
-- holds another type.
--
-- Keys it touches: paused (declared); the channel wake.

local g = guard('paused', 'string')
if g then return redis.error_reply(g) end
local cur = redis.call('GET', KEYS[1]) or ''
local set = {}
for l, m in string.gmatch(cur, '(%d+):(%a)') do set[tonumber(l)] = m end
local mode = ARGV[4]
for l = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  if mode == '' then set[l] = nil else set[l] = mode end
end
local ls = {}
for l in pairs(set) do ls[#ls + 1] = l end
table.sort(ls)
local out = ','
for _, l in ipairs(ls) do out = out .. l .. ':' .. set[l] .. ',' end
if #ls == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], out) end
redis.call('PUBLISH', P .. 'wake', 'p' .. out)
if mode == '' then redis.call('PUBLISH', P .. 'wake', ARGV[3]) end
return out
