package queue

import "github.com/redis/go-redis/v9"

// luaPrelude is prepended to every script that moves a task between
// states. ARGV[1] is always the key prefix "{ns:queue}:"; every key a script
// builds from it shares the hash tag of KEYS[1].
//
// Bookkeeping kept by these functions, so that every transition is one
// atomic step:
//   - leases   ZSET id -> lease deadline (ms)
//   - running  ZSET id -> level, the preemptible tasks now running (fleet view)
//   - busy     HASH worker -> leases it holds
//   - cnt      HASH a<level>/s<level>/d<level> -> active/scheduled/dead per level
const luaPrelude = `
local P = ARGV[1]
local function tkey(id) return P .. 't:' .. id end

local function release(id, h)
  local w, lvl = unpack(redis.call('HMGET', h, 'wkr', 'lvl'))
  redis.call('ZREM', P .. 'leases', id)
  redis.call('ZREM', P .. 'running', id)
  if w and w ~= '' then redis.call('HINCRBY', P .. 'busy', w, -1) end
  if lvl then redis.call('HINCRBY', P .. 'cnt', 'a' .. lvl, -1) end
  redis.call('HDEL', h, 'tok', 'wkr', 'ldl')
  return lvl
end

local function acquire(id, h, lvl, now, dl, tok, w)
  redis.call('HSET', h, 'state', 'active', 'tok', tok, 'wkr', w, 'ldl', dl, 'stt', now)
  redis.call('ZADD', P .. 'leases', dl, id)
  redis.call('HINCRBY', P .. 'busy', w, 1)
  redis.call('HINCRBY', P .. 'cnt', 'a' .. lvl, 1)
  if redis.call('HGET', h, 'prb') ~= '0' then
    redis.call('ZADD', P .. 'running', lvl, id)
  end
end

local function push_pending(id, h, lvl, now, head)
  redis.call('HSET', h, 'state', 'pending', 'rdy', now)
  if head then
    redis.call('LPUSH', P .. 'p:' .. lvl, id)
  else
    redis.call('RPUSH', P .. 'p:' .. lvl, id)
  end
  redis.call('PUBLISH', P .. 'wake', lvl)
end

local function to_dead(id, h, now, reason)
  local lvl = redis.call('HGET', h, 'lvl') or '0'
  redis.call('HSET', h, 'state', 'dead', 'err', reason, 'fin', now)
  redis.call('ZADD', P .. 'dead', now, id)
  redis.call('HINCRBY', P .. 'cnt', 'd' .. lvl, 1)
end

-- promote moves due scheduled and retrying tasks to the tail of their level.
local function promote(now)
  local ids = redis.call('ZRANGEBYSCORE', P .. 'scheduled', '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(ids) do
    local h = tkey(id)
    redis.call('ZREM', P .. 'scheduled', id)
    local lvl = redis.call('HGET', h, 'lvl')
    if lvl then
      redis.call('HINCRBY', P .. 'cnt', 's' .. lvl, -1)
      push_pending(id, h, lvl, now, false)
    end
  end
end

-- recover returns tasks whose lease expired (crashed worker) to the head of
-- their level; they resume from their last checkpoint.
local function recover(now)
  local ids = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(ids) do
    local h = tkey(id)
    if redis.call('EXISTS', h) == 1 then
      local lvl = release(id, h)
      redis.call('HINCRBY', h, 'rec', 1)
      if lvl then
        push_pending(id, h, lvl, now, true)
      else
        to_dead(id, h, now, 'malformed record: no level')
      end
    else
      redis.call('ZREM', P .. 'leases', id)
    end
  end
end

local function check_token(h, tok)
  local cur = redis.call('HGET', h, 'tok')
  if (not cur) or cur ~= tok then
    return false
  end
  return true
end
`

func newScript(body string) *redis.Script { return redis.NewScript(luaPrelude + body) }

const leaseLostMsg = "LEASE_LOST"
