-- prelude.lua: the helpers of every script that moves a task between
-- states; the loader (lua.go) puts this file first in each script whose
-- "-- uses:" line names it.
--
-- Expects: ARGV[1], the key prefix "{<ns>:<queue>}:". Every key a helper
-- builds from it shares the hash tag of the script's KEYS, so the script
-- touches one slot. The caller declares in KEYS every key whose name it
-- knows, and last the key absent, which no one writes: while the slot
-- migrates Redis refuses the whole script before it runs, so the keys the
-- helpers find as they run (IDs popped, promoted, recovered) are local
-- whenever a script runs (see scriptKeys in declare.go).
--
-- uses: fields.lua
-- defines: P tkey skey ckey clock typeof guard header hdr_of decode sget
-- defines: sput num level_of push_pending to_dead band_release feed release
-- defines: set_aside shared promote recover due_reads age unique_release
-- defines: to_canceled
--
-- The data model (schema 2), per task:
--   t:<id>  STRING, the record, written once at enqueue:
--           "2|<level>|<preemptible 0/1>|<enqueued ms>|" then what only Go
--           reads (see record.go). Scripts read the header, never the payload.
--   s:<id>  STRING, the mutable state as a JSON object of strings, its
--           fields named in fields.lua (F_STATE, F_TOKEN, ...; their keys
--           and meanings are stateFields in fields.go). It exists only once
--           the task left its first pending state, so a fresh pending task
--           is one key.
--   c:<id>  STRING, the checkpoint, only while one is saved.
--   x:<id>, xs:<id>  a record or state of the wrong type, set aside.
--
-- Per queue: p:<level> LISTs of IDs; ZSETs leases (id -> deadline), running
-- (id -> level, preemptible active tasks below the top level: the fleet's
-- victims), scheduled (id -> due), dead, done (id -> expiry), alive
-- (worker -> alive-until); HASHes busy (worker, and worker|pool -> leases),
-- cap (worker -> "<capacity>@<heartbeat ms>[@<slot pools>]", written by
-- heartbeat.lua), n (C_ACTIVE/C_SCHEDULED/C_DEAD .. <level> -> active,
-- scheduled, dead per level; see fields.lua),
-- r:<bucket> (rates, see buckets.lua); STRINGs v (the schema), paused
-- (",<level>:<w|p>,...", see pause.lua), shape (levels, names and classes,
-- see shape.lua), res:<id> (a task's result, see result.lua), u:<digest>
-- (a uniqueness lock, released by unique_release) and periodic:<name> (a schedule's last tick, see
-- enqueue.lua); the channel wake and the stream feed.
--
-- Keys the helpers touch, all built from P: t:, s:, c:, x:, xs:<id>,
-- p:<level>, leases, running, scheduled, dead, done, busy, alive, n, wake,
-- feed, and u:<digest> (the lock a canceled task's record names).
--
-- Time is Redis's own (TIME), unless a test injected a clock (ARGV now).
--
-- Scripts fail closed: every shared key a script writes is checked (TYPE,
-- or a read that fails first) before its first write, and a failing write
-- is undone, so a wrong-typed key yields a CORRUPT error naming it and
-- changes nothing (Redis does not roll back a failed script).

local P = ARGV[1]
local function tkey(id) return P .. 't:' .. id end
local function skey(id) return P .. 's:' .. id end
local function ckey(id) return P .. 'c:' .. id end

-- clock returns now in ms: the injected clock if given, else Redis's.
local function clock(arg)
  if arg and arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function typeof(k)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok or t['ok'] end
  return t
end

-- guard returns a CORRUPT message for the first of the named keys (suffix,
-- wanted type pairs) that holds another type, or nil.
local function guard(...)
  local a = {...}
  for i = 1, #a, 2 do
    local k = P .. a[i]
    local t = typeof(k)
    if t ~= 'none' and t ~= a[i + 1] then
      return 'CORRUPT ' .. k .. ' is a ' .. t .. ', want a ' .. a[i + 1]
    end
  end
  return nil
end

-- header parses a record's header: level, preemptible (prb), enqueued ms
-- (enq).
local function header(blob)
  if not blob then return nil end
  local v, l, prb, enq = string.match(blob, '^(%d+)|(%d+)|([01])|(%d+)|')
  if v ~= '2' then return nil end
  return {level = l, prb = prb, enq = enq}
end

local function hdr_of(id)
  return header(redis.call('GETRANGE', tkey(id), 0, 63))
end

-- sget reads a task's state: the table, or {} when it has none yet (a
-- fresh pending task), or nil plus a CORRUPT message when the key holds
-- another type or the JSON is garbled.
local function decode(raw)
  if not raw then return {} end
  local ok, s = pcall(cjson.decode, raw)
  if ok and type(s) == 'table' then return s end
  return nil
end

local function sget(id)
  local ok, raw = pcall(redis.call, 'GET', skey(id))
  if not ok then return nil, 'CORRUPT ' .. skey(id) .. ' is a ' .. typeof(skey(id)) .. ', want a string' end
  local s = decode(raw)
  if not s then return nil, 'CORRUPT ' .. skey(id) .. ' is not a JSON object' end
  return s
end

local function sput(id, s) redis.call('SET', skey(id), cjson.encode(s)) end

local function num(v) return tonumber(v or '') or 0 end

-- level returns the task's current level: its state's, else its record's.
local function level_of(s, h)
  if s[F_LEVEL] then return s[F_LEVEL] end
  if h then return h.level end
  return nil
end

-- push_pending makes a task pending at the head or tail of its level and
-- announces it when the list was empty (else an earlier announcement of
-- that level is still unanswered: waking workers again gains nothing).
local function push_pending(id, s, lvl, now, head)
  s[F_STATE], s[F_LEVEL], s[F_READY_AT] = 'pending', tostring(lvl), tostring(now)
  sput(id, s)
  local n
  if head then n = redis.call('LPUSH', P .. 'p:' .. lvl, id) else n = redis.call('RPUSH', P .. 'p:' .. lvl, id) end
  if n == 1 then redis.call('PUBLISH', P .. 'wake', lvl) end
end

local function to_dead(id, s, lvl, now, reason)
  s[F_STATE], s[F_ERROR], s[F_FINISHED_AT] = 'dead', reason, tostring(now)
  s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL] = nil, nil, nil, nil
  sput(id, s)
  redis.call('ZADD', P .. 'dead', now, id)
  redis.call('HINCRBY', P .. 'n', C_DEAD .. (lvl or '0'), 1)
end

-- band_release takes d off the busy count of worker w's slot pool b
-- (runtime pools; see Heartbeat.Pools), removing the field at zero.
local function band_release(w, b, d)
  if not w or not b then return end
  local f = w .. '|' .. b
  if redis.call('HINCRBY', P .. 'busy', f, d) <= 0 then redis.call('HDEL', P .. 'busy', f) end
end

-- feed appends an event to the preemption feed, a stream capped at about
-- 1000 entries (see Store.Preemptions); written only on preemptions,
-- resumes and cancels, never for an ordinary task. A wrong-typed key is skipped.
local function feed(kind, at, ...)
  pcall(redis.call, 'XADD', P .. 'feed', 'MAXLEN', '~', 1000, '*', 'k', kind, 't', at, ...)
end

-- release ends a lease (one task; batches do it themselves) and returns
-- the level it was leased from.
local function release(id, s)
  local w, lvl = s[F_WORKER], s[F_LEASED_LEVEL]
  redis.call('ZREM', P .. 'leases', id)
  redis.call('ZREM', P .. 'running', id)
  if w and w ~= '' then
    if redis.call('HINCRBY', P .. 'busy', w, -1) <= 0 and not redis.call('ZSCORE', P .. 'alive', w) then
      redis.call('HDEL', P .. 'busy', w)
    end
    band_release(w, s[F_POOL], -1)
  end
  if lvl then redis.call('HINCRBY', P .. 'n', C_ACTIVE .. lvl, -1) end
  s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL], s[F_POOL] = nil, nil, nil, nil, nil
  return lvl
end

-- set_aside dead-letters a task whose record key holds another type: the
-- key is renamed to x:<id> (kept for the operator), the ID goes to the dead
-- set with the reason, counted dead at level ls (the list it was popped
-- from, kept in its state), and nothing else waits on it.
local function set_aside(id, now, why, ls)
  redis.call('RENAME', tkey(id), P .. 'x:' .. id)
  if typeof(skey(id)) ~= 'string' and typeof(skey(id)) ~= 'none' then
    redis.call('RENAME', skey(id), P .. 'xs:' .. id)
  end
  redis.call('SET', skey(id), cjson.encode({[F_STATE] = 'dead', [F_ERROR] = why, [F_FINISHED_AT] = tostring(now), [F_LEVEL] = ls}))
  redis.call('ZADD', P .. 'dead', now, id)
  redis.call('HINCRBY', P .. 'n', C_DEAD .. ls, 1)
end

-- unique_release releases the uniqueness lock that task id's record
-- names in its headers (the overtake-unique header, see unique.go), while
-- the lock still names the task: a canceled task will not run, so an
-- equal one may come. A record that cannot be read keeps its lock until
-- its time to live ends.
local function unique_release(id)
  local ok, raw = pcall(redis.call, 'GET', tkey(id))
  if not ok or not raw then return end
  local _, pos = string.find(raw, '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|')
  if not pos then return end
  pos = pos + 1
  local hdrs
  for _ = 1, 3 do -- type, class, headers: "<len>:<bytes>" each
    local n, at = string.match(raw, '^(%d+):()', pos)
    if not n then return end
    hdrs, pos = string.sub(raw, at, at + tonumber(n) - 1), at + tonumber(n)
  end
  local d = string.match(hdrs, '"overtake%-unique":"(%x+)"')
  if not d then return end
  local ok2, v = pcall(redis.call, 'GET', P .. 'u:' .. d)
  if ok2 and v == id then redis.call('DEL', P .. 'u:' .. d) end
end

-- to_canceled ends task id canceled: its state says so (with when, and
-- the error "canceled"), it is kept in done for ret ms as a done task is,
-- counted canceled at level lvl, its checkpoint deleted (a canceled task
-- never resumes), its uniqueness lock released, and the feed told. The
-- caller has taken it out of its list, set or lease (release) first.
local function to_canceled(id, s, lvl, now, ret, worker)
  s[F_STATE], s[F_ERROR], s[F_FINISHED_AT] = 'canceled', 'canceled', tostring(now)
  s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL], s[F_POOL] = nil, nil, nil, nil, nil
  s[F_SCHEDULED_LEVEL] = nil
  sput(id, s)
  pcall(redis.call, 'ZADD', P .. 'done', now + math.max(ret or 0, 0), id) -- a wrong-typed done: kept
  redis.call('HINCRBY', P .. 'n', C_CANCELED .. (lvl or '0'), 1)
  redis.call('DEL', ckey(id))
  unique_release(id)
  feed('canceled', now, 'id', id, 'l', lvl or '0', 'w', worker or '')
end

-- shared is the guard of the keys every lease transition writes.
local function shared()
  return guard('leases', 'zset', 'running', 'zset', 'busy', 'hash', 'n', 'hash', 'dead', 'zset')
end

-- promote moves due scheduled and retrying tasks to the tail of their
-- level. A task whose list or state is corrupt stays scheduled (reported);
-- one whose level is not a level of the queue is dead-lettered.
local function promote(ids, now, top, bad)
  -- make_due takes one due task (state s, level lvl, l as a number) out
  -- of scheduled and makes it pending at the tail of its level, or
  -- dead-letters it when l is not a level of the queue (0..top). An ID
  -- with neither record nor state only leaves the set.
  local function make_due(id, s, lvl, l)
    redis.call('ZREM', P .. 'scheduled', id)
    if redis.call('EXISTS', tkey(id)) == 0 and not next(s) then return end
    redis.call('HINCRBY', P .. 'n', C_SCHEDULED .. (s[F_SCHEDULED_LEVEL] or lvl or '0'), -1)
    s[F_SCHEDULED_LEVEL] = nil
    if l and l >= 0 and l <= top and l == math.floor(l) then
      push_pending(id, s, l, now, false)
    else
      to_dead(id, s, '0', now, 'malformed record: bad level ' .. tostring(lvl))
    end
  end
  for _, id in ipairs(ids) do
    local s, e = sget(id)
    local h = hdr_of(id)
    local lvl = s and level_of(s, h)
    local l = tonumber(lvl or '')
    local lt = l and typeof(P .. 'p:' .. l)
    if not s then bad[#bad + 1] = e
    elseif lt and lt ~= 'none' and lt ~= 'list' then bad[#bad + 1] = 'CORRUPT ' .. P .. 'p:' .. l .. ' is a ' .. lt .. ', want a list'
    else make_due(id, s, lvl, l)
    end
  end
end

-- recover returns tasks whose lease expired (crashed worker) to the head
-- of their level; they resume from their last checkpoint. A task whose
-- cancel was requested (F_CANCEL) ends canceled instead, kept ret ms.
local function recover(ids, now, bad, ret)
  for _, id in ipairs(ids) do
    local s, e = sget(id)
    local lvl = s and s[F_TOKEN] and (s[F_LEASED_LEVEL] or level_of(s, hdr_of(id)))
    local lt = lvl and typeof(P .. 'p:' .. lvl)
    if not s then
      bad[#bad + 1] = e
    elseif not s[F_TOKEN] then
      redis.call('ZREM', P .. 'leases', id) -- no lease left behind the set's back
    elseif lt and lt ~= 'none' and lt ~= 'list' then
      bad[#bad + 1] = 'CORRUPT ' .. P .. 'p:' .. lvl .. ' is a ' .. lt .. ', want a list'
    else
      local ow = s[F_WORKER]
      release(id, s)
      s[F_RECOVERIES] = tostring(num(s[F_RECOVERIES]) + 1)
      if s[F_CANCEL] then
        to_canceled(id, s, lvl, now, ret, ow)
      elseif lvl then
        push_pending(id, s, lvl, now, true)
      else
        to_dead(id, s, '0', now, 'malformed record: no level')
      end
    end
  end
end

-- due_reads fetches what promote and recover act on; these reads come
-- first, so a wrong-typed scheduled or leases key is found before any
-- write. Each set's earliest entry is read first: when it is not yet due
-- (an idle queue's case) that one read is all, and its time is returned
-- too (nf, 0 when the set is empty) for the caller's next-due reply.
local function due_reads(now, bad)
  local sch, nf = {}, 0
  local ok1, first = pcall(redis.call, 'ZRANGE', P .. 'scheduled', 0, 0, 'WITHSCORES')
  if not ok1 then
    bad[#bad + 1] = 'CORRUPT ' .. P .. 'scheduled is a ' .. typeof(P .. 'scheduled') .. ', want a zset'
  elseif first[2] and tonumber(first[2]) <= now then
    sch = redis.call('ZRANGEBYSCORE', P .. 'scheduled', '-inf', now, 'LIMIT', 0, 100)
  elseif first[2] then
    nf = tonumber(first[2])
  end
  -- (The anchor of leases, anchor.lua, scores 1e13, later than any lease
  -- deadline: a set holding only it holds no lease.)
  local ok2, lfirst = pcall(redis.call, 'ZRANGE', P .. 'leases', 0, 0, 'WITHSCORES')
  if not ok2 then return nil, nil, 'CORRUPT ' .. P .. 'leases is a ' .. typeof(P .. 'leases') .. ', want a zset' end
  local exp, dl = {}, tonumber(lfirst[2] or '')
  if dl and dl <= now then
    exp = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)
  elseif dl and dl < 1e13 and (nf == 0 or dl < nf) then
    nf = dl
  end
  return sch, exp, nil, nf
end

-- age moves pending tasks that waited at least 'after' ms at a level below
-- 'top' to the tail of the next level up, so low priority never starves
-- under a stream of urgent work. Only the heads of the lists are looked at
-- (the longest waiting), at most about 20 per call and at least one per
-- level. A moved task is announced with its new level, so a saturated
-- worker may preempt for it.
local function age(now, after, top, bad)
  if after <= 0 or top < 1 then return end
  -- age_head looks at the head of list src (level lvl): an ID with no
  -- record and no state is dropped (0), a task that waited at least after
  -- ms moves to the tail of dst (1); otherwise aging stops there (nil). A
  -- task's time at its level runs from agd (when it last aged) or rdy
  -- (when it last became pending, else its enqueue time).
  local function age_head(src, dst, lvl)
    local id = redis.call('LINDEX', src, 0)
    if not id then return nil end
    local h = hdr_of(id)
    local s = sget(id)
    if not h and redis.call('EXISTS', tkey(id)) == 0 then
      redis.call('LPOP', src)
      return 0
    end
    if not s then return nil end
    local since = math.max(num(s[F_READY_AT] or (h and h.enq)), num(s[F_AGED_AT]))
    if now - since < after then return nil end
    redis.call('LPOP', src)
    redis.call('RPUSH', dst, id)
    s[F_STATE], s[F_LEVEL], s[F_AGED_AT], s[F_READY_AT] = 'pending', tostring(lvl + 1), tostring(now), s[F_READY_AT] or (h and h.enq)
    sput(id, s)
    return 1
  end
  local per = math.max(1, math.floor(20 / top))
  for lvl = top - 1, 0, -1 do
    local src, dst = P .. 'p:' .. lvl, P .. 'p:' .. (lvl + 1)
    local g = guard('p:' .. lvl, 'list', 'p:' .. (lvl + 1), 'list')
    local moved = 0
    if g then bad[#bad + 1] = g; per = 0 end
    for _ = 1, per do
      local got = age_head(src, dst, lvl)
      if not got then break end
      moved = moved + got
    end
    if moved > 0 then redis.call('PUBLISH', P .. 'wake', lvl + 1) end
  end
end
