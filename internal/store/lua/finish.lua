-- finish.lua: ends leases (Store.Ack, Retry, DeadLetter, Requeue): ack,
-- retry, dead-letter or requeue, for one task or a batch (acks are grouped,
-- see groupCommit). Each op first checks its lease token, so a stale holder
-- changes nothing (fencing). Shared keys are written once per batch: a
-- batch of acks costs one MGET, one DEL, one ZREM per set and one HINCRBY
-- per counter.
--
-- uses: fields.lua prelude.lua acks.lua
--
-- KEYS     (newScriptKeys in declare.go; the script builds the same names
--          from P) leases, running, scheduled, dead, done, alive (ZSETs),
--          busy, n (HASHes), feed (STREAM), p:0..p:<max level> (LISTs),
--          then t:<id>, s:<id>, c:<id> of each op, then
--          absent, a key no one writes: while the queue's slot migrates,
--          Redis Cluster refuses the whole call (TRYAGAIN) before it runs
--          (see scriptKeys in declare.go)
-- ARGV[1]  the key prefix (P)
-- ARGV[2]  now in ms, or "" for Redis's clock
-- ARGV[3]  retention in ms (Config.Retention; 0: records go at once)
-- ARGV[4..] per op, six arguments: id, token, mode (ack | retry | dead |
--          requeue | cancel), a, b, run spans; retry: a = delay ms, b =
--          error; dead: b = reason; requeue: a = "preempted" counts a
--          preemption; cancel ends the task canceled (its handler returned
--          after its cancel was requested).
-- A task whose cancel was requested (F_CANCEL, see cancel.lua) ends
-- canceled by every op but an ack (to_canceled in prelude.lua): it never
-- runs again; an ack (the handler succeeded first) ends it done.
-- A batch of acks without retention comes compact: ARGV[4] "" (no ID is
-- empty), then id, token per ack (see fast_acks in acks.lua).
--
-- Reply: one entry per op: 1, 2 (ended canceled), "L" (lease lost) or a
-- CORRUPT message; or an
-- error reply (CORRUPT ...) when a shared key holds another type.
--
-- Keys it touches: those declared in KEYS; with retention, t:<id>,
-- s:<id>, c:<id> of the done records it expires (found as it runs, safe
-- because absent is declared); the channel wake.

if ARGV[4] == '' then return fast_acks(4, 2, (#ARGV - 4) / 2) end
local ret = tonumber(ARGV[3])
local nops = (#ARGV - 3) / 6
local onlyacks = ret <= 0
for i = 1, nops do if ARGV[3 + 6 * (i - 1) + 3] ~= 'ack' then onlyacks = false end end
if onlyacks then return fast_acks(3, 6, nops) end
local now = clock(ARGV[2])
local g = shared() or guard('scheduled', 'zset')
if not g and ret > 0 then g = guard('done', 'zset') end
if g then return redis.error_reply(g) end
local retried = {} -- ids this call scheduled for a retry
local sk = {}
for i = 1, nops do sk[i] = skey(ARGV[3 + 6 * (i - 1) + 1]) end
local raws = redis.call('MGET', unpack(sk))
local res, lrm, dels, busy, acnt, bands = {}, {}, {}, {}, {}, {}
local ended = {} -- a second op on one lease in a batch: the first ended it
for i = 1, nops do
  local b = 3 + 6 * (i - 1)
  local id, tok, mode, a, reason, rsp = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local s = decode(raws[i])
  local lvl = s and s[F_LEASED_LEVEL]
  local lt = 'none'
  if mode == 'requeue' and lvl then lt = typeof(P .. 'p:' .. lvl) end
  if not raws[i] and typeof(sk[i]) ~= 'none' then
    res[i] = 'CORRUPT ' .. sk[i] .. ' is a ' .. typeof(sk[i]) .. ', want a string'
  elseif not s or s[F_TOKEN] ~= tok or ended[id] then
    res[i] = 'L'
  elseif lt ~= 'none' and lt ~= 'list' then
    res[i] = 'CORRUPT ' .. P .. 'p:' .. lvl .. ' is a ' .. lt .. ', want a list'
  else
    res[i] = 1
    ended[id] = true
    lrm[#lrm + 1] = id
    if s[F_WORKER] then busy[s[F_WORKER]] = (busy[s[F_WORKER]] or 0) - 1 end
    if s[F_WORKER] and s[F_POOL] then bands[s[F_WORKER] .. '|' .. s[F_POOL]] = (bands[s[F_WORKER] .. '|' .. s[F_POOL]] or 0) - 1 end
    if lvl then acnt[lvl] = (acnt[lvl] or 0) - 1 end
    local ow, ostt = s[F_WORKER], s[F_LEASED_AT]
    s[F_WORKER], s[F_TOKEN], s[F_LEASED_AT], s[F_LEASED_LEVEL], s[F_POOL] = nil, nil, nil, nil, nil
    if mode ~= 'ack' and rsp ~= '' then s[F_RUN_SPANS] = rsp end
    if mode ~= 'ack' and (mode == 'cancel' or s[F_CANCEL]) then
      res[i] = 2
      to_canceled(id, s, lvl or level_of(s, hdr_of(id)), now, ret, ow)
    elseif mode == 'ack' then
      s[F_STATE], s[F_FINISHED_AT] = 'done', tostring(now)
      sput(id, s)
      dels[#dels + 1] = ckey(id)
      redis.call('ZADD', P .. 'done', now + ret, id)
    elseif mode == 'retry' then
      local due = now + tonumber(a)
      s[F_ATTEMPT], s[F_STATE], s[F_ERROR], s[F_PROCESS_AT], s[F_SCHEDULED_LEVEL] =
        tostring(num(s[F_ATTEMPT]) + 1), 'retry', reason, tostring(due), lvl or '0'
      sput(id, s)
      redis.call('ZADD', P .. 'scheduled', due, id)
      redis.call('HINCRBY', P .. 'n', C_SCHEDULED .. (lvl or '0'), 1)
      retried[id] = true
    elseif mode == 'dead' then
      s[F_ATTEMPT] = tostring(num(s[F_ATTEMPT]) + 1)
      to_dead(id, s, lvl or level_of(s, hdr_of(id)), now, reason)
    else
      if a == 'preempted' then
        s[F_PREEMPTIONS] = tostring(num(s[F_PREEMPTIONS]) + 1)
        feed('gave_way', now, 'id', id, 'l', lvl or '0', 'w', ow or '', 'ran', math.max(now - num(ostt), 0),
          'cps', s[F_CHECKPOINT_SEQ] or '0')
      end
      if lvl then push_pending(id, s, lvl, now, true) else to_dead(id, s, '0', now, 'malformed record: no level') end
    end
  end
end
if #lrm > 0 then
  redis.call('ZREM', P .. 'leases', unpack(lrm))
  redis.call('ZREM', P .. 'running', unpack(lrm))
  for w, d in pairs(busy) do
    if redis.call('HINCRBY', P .. 'busy', w, d) <= 0 and not redis.call('ZSCORE', P .. 'alive', w) then
      redis.call('HDEL', P .. 'busy', w)
    end
  end
  for f, d in pairs(bands) do
    if redis.call('HINCRBY', P .. 'busy', f, d) <= 0 then redis.call('HDEL', P .. 'busy', f) end
  end
  for l, d in pairs(acnt) do redis.call('HINCRBY', P .. 'n', C_ACTIVE .. l, d) end
  if #dels > 0 then redis.call('DEL', unpack(dels)) end
end
if next(retried) then
  -- A retry that is now the earliest due task is announced like a delayed
  -- enqueue ("s"): an idle worker then learns its due time at once, where
  -- a lease call that ran just before it reported none.
  local first = redis.call('ZRANGE', P .. 'scheduled', 0, 0)
  if first[1] and retried[first[1]] then redis.call('PUBLISH', P .. 'wake', 's') end
end
if ret > 0 then
  -- With retention, acks expire old done records (the heartbeat does too).
  local old = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', now, 'LIMIT', 0, 20)
  for _, o in ipairs(old) do
    redis.call('DEL', tkey(o), skey(o), ckey(o))
    redis.call('ZREM', P .. 'done', o)
  end
end
return res
