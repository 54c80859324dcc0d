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
//
// Pending counts are the lists' lengths (LLEN), so moving a pending task
// between lists (age) needs no counter.
const luaPrelude = `
local P = ARGV[1]
local function tkey(id) return P .. 't:' .. id end

-- incr adds one to a counter field of a task record. A field that is not an
-- integer (a malformed record) restarts from zero instead of failing the
-- script halfway: Redis does not roll back a failed script's earlier writes,
-- which would leave the task released but in no state at all.
local function incr(h, f)
  local v = redis.call('HGET', h, f)
  if v and not string.match(v, '^%-?%d+$') then redis.call('HDEL', h, f) end
  return redis.call('HINCRBY', h, f, 1)
end

-- release ends a lease and returns the task's level: the level it was leased
-- from ('alv', always valid) rather than the record's 'lvl', which a
-- malformed record may have lost or garbled, so that the counters stay
-- right and a recovered task returns to a list that is leased from.
local function release(id, h)
  local w, lvl, alv = unpack(redis.call('HMGET', h, 'wkr', 'lvl', 'alv'))
  lvl = alv or lvl
  redis.call('ZREM', P .. 'leases', id)
  redis.call('ZREM', P .. 'running', id)
  if w and w ~= '' then
    -- A departed worker's last lease takes its busy field with it.
    if redis.call('HINCRBY', P .. 'busy', w, -1) <= 0 and not redis.call('ZSCORE', P .. 'alive', w) then
      redis.call('HDEL', P .. 'busy', w)
    end
  end
  if lvl then redis.call('HINCRBY', P .. 'cnt', 'a' .. lvl, -1) end
  redis.call('HDEL', h, 'tok', 'wkr', 'ldl', 'alv')
  return lvl
end

local function acquire(id, h, lvl, now, dl, tok, w)
  redis.call('HSET', h, 'id', id, 'state', 'active', 'tok', tok, 'wkr', w, 'ldl', dl, 'stt', now, 'alv', lvl)
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
-- A record whose level is missing or not a level of the queue (0..top) is
-- dead-lettered rather than pushed to a list nothing leases from; the
-- scheduled count it was made under (slv, else its level) is taken back.
local function promote(now, top)
  local ids = redis.call('ZRANGEBYSCORE', P .. 'scheduled', '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(ids) do
    local h = tkey(id)
    redis.call('ZREM', P .. 'scheduled', id)
    if redis.call('EXISTS', h) == 1 then
      local lvl, slv = unpack(redis.call('HMGET', h, 'lvl', 'slv'))
      local l = tonumber(lvl)
      redis.call('HINCRBY', P .. 'cnt', 's' .. (slv or lvl or '0'), -1)
      redis.call('HDEL', h, 'slv')
      if l and l >= 0 and l <= top and l == math.floor(l) then
        push_pending(id, h, lvl, now, false)
      else
        redis.call('HSET', h, 'lvl', '0')
        to_dead(id, h, now, 'malformed record: bad level ' .. tostring(lvl))
      end
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
      incr(h, 'rec')
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

-- age moves pending tasks that waited at least 'after' ms at a level below
-- 'top' to the TAIL of the next level up, so low priority never starves
-- under a stream of urgent work. Only the heads of the lists are looked at
-- (the longest waiting, as lists are FIFO), at most about 20 per call, and
-- at least one per level so that every level makes progress. A task's time
-- at its level runs from 'agd' (when it last aged) or 'rdy' (when it last
-- became pending), whichever is later; a task that ages keeps its first
-- level in 'olvl' and stays at the level it reached when it is leased,
-- retried or requeued. A moved task is announced on the wake channel with
-- its new level, so a saturated worker may preempt for it. A record deleted
-- behind its list's back is dropped from the list, as leasing does.
local function age(now, after, top)
  if after <= 0 or top < 1 then return end
  local per = math.max(1, math.floor(20 / top))
  for lvl = top - 1, 0, -1 do
    local src, dst = P .. 'p:' .. lvl, P .. 'p:' .. (lvl + 1)
    local moved = 0
    for _ = 1, per do
      local id = redis.call('LINDEX', src, 0)
      if not id then break end
      local h = tkey(id)
      if redis.call('EXISTS', h) == 0 then
        redis.call('LPOP', src)
      else
        local rdy, agd = unpack(redis.call('HMGET', h, 'rdy', 'agd'))
        local since = math.max(tonumber(rdy or '') or 0, tonumber(agd or '') or 0)
        if now - since < after then break end
        redis.call('LPOP', src)
        redis.call('RPUSH', dst, id)
        redis.call('HSETNX', h, 'olvl', lvl)
        redis.call('HSET', h, 'lvl', lvl + 1, 'agd', now)
        moved = moved + 1
      end
    end
    if moved > 0 then redis.call('PUBLISH', P .. 'wake', lvl + 1) end
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
