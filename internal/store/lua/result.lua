-- result.lua: stores a task's result under a valid lease, in a key of its
-- own with its own expiry, so it outlives the task's record (deleted at
-- the ack) for the retention period (Store.SaveResult). A later write, by
-- the same run or a later one, replaces it and restarts its expiry.
--
-- KEYS[1]  the task's state s:<id> (STRING), where the lease token is
-- KEYS[2]  the task's result res:<id> (STRING)
-- ARGV[1]  lease token
-- ARGV[2]  the rest of the value, built by Go (see result.go):
--          "<enqueued ms>|<level>|<len>:<type>" then the result bytes
-- ARGV[3]  retention in ms (> 0)
-- ARGV[4]  now in ms, or "" for Redis's clock
--
-- The value written: "<written ms>|<expires ms>|" then ARGV[2].
--
-- Reply: the time written, in ms; or the error reply LEASE_LOST (leaseLostMsg
-- in lua.go) when the token is not the task's lease (a stale worker, a task
-- gone or no longer active), changing nothing; or CORRUPT ... when the
-- state holds another type or is not JSON.
--
-- Keys it touches. Declared in KEYS: s:<id> (read), res:<id> (written).
-- Built from the prefix: none.
--
-- The state's fields are named by fields.lua, joined in first:
-- uses: fields.lua

local ok, raw = pcall(redis.call, 'GET', KEYS[1])
if not ok then return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is not a string') end
if not raw then return redis.error_reply('LEASE_LOST') end
local dok, s = pcall(cjson.decode, raw)
if not dok or type(s) ~= 'table' then return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is not a JSON object') end
if s[F_TOKEN] ~= ARGV[1] then return redis.error_reply('LEASE_LOST') end

local now
if ARGV[4] ~= '' then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local keep = tonumber(ARGV[3])
redis.call('SET', KEYS[2], now .. '|' .. (now + keep) .. '|' .. ARGV[2], 'PX', keep)
return now
