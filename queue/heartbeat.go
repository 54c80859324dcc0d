package queue

import (
	"github.com/overtake/overtake/internal/wire"

	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// heartbeatScript registers a live worker and extends its leases in one
// call. It first checks the queue's schema version (writing it on a new
// queue), so a worker of another version refuses to run. It also recovers
// expired leases and ages long-waiting tasks, as leasing does, so crashed
// workers' tasks return and low levels keep aging even while every worker
// is saturated (nobody leases then). A lease whose token no longer matches
// is not extended and its ID is returned as lost. Records of workers whose
// liveness expired are removed, and so are completed task records whose
// retention ended.
//
// It adds the worker's outcome counts since its previous heartbeat to the
// current rate bucket (see rates.go) and returns the paused levels, read
// with the schema version in one command.
//
//	KEYS[1] alive
//	ARGV[1] prefix  ARGV[2] worker  ARGV[3] now ms or ""  ARGV[4] ttl ms
//	ARGV[5] capacity  ARGV[6] lease ms  ARGV[7] age after ms (0: no aging)
//	ARGV[8] top level  ARGV[9] schema version
//	ARGV[10] counts as "level:processed:failed:preempted:breaches;..." or ""
//	ARGV[11] slot pools as "pool:size:l,l:borrow:name/..." or ""
//	ARGV[12..] id, token pairs
//
// Returns {lost ids, corruption, paused}.
var heartbeatScript = newScript(countsLua + `
local w, now = ARGV[2], clock(ARGV[3])
local vp = redis.call('MGET', P .. 'v', P .. 'paused')
local v, paused = vp[1], vp[2] or ''
if not v then
  if redis.call('EXISTS', P .. 'cnt') == 1 then v = '1' else redis.call('SET', P .. 'v', ARGV[9]); v = ARGV[9] end
end
if v ~= ARGV[9] then
  return redis.error_reply('SCHEMA the queue holds data of schema version ' .. v .. '; this worker reads version ' .. ARGV[9])
end
-- Reads first: each also checks its key's type before anything is written.
local bad = {}
local sch, exp, e = due_reads(now, bad)
if e then return redis.error_reply(e) end
local ok1, dead = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'alive', '-inf', '(' .. now, 'LIMIT', 0, 20)
if not ok1 then return redis.error_reply('CORRUPT ' .. P .. 'alive is a ' .. typeof(P .. 'alive') .. ', want a zset') end
local ok2, done = pcall(redis.call, 'ZRANGEBYSCORE', P .. 'done', '-inf', now, 'LIMIT', 0, 100)
if not ok2 then return redis.error_reply('CORRUPT ' .. P .. 'done is a ' .. typeof(P .. 'done') .. ', want a zset') end
if #exp > 0 or tonumber(ARGV[7]) > 0 then
  local g = shared()
  if g then return redis.error_reply(g) end
  recover(exp, now, bad)
  age(now, tonumber(ARGV[7]), tonumber(ARGV[8]), bad)
end
local capv = ARGV[5] .. '@' .. now
if ARGV[11] ~= '' then capv = capv .. '@' .. ARGV[11] end
if not pcall(redis.call, 'HSET', P .. 'cap', w, capv) then
  return redis.error_reply('CORRUPT ' .. P .. 'cap is a ' .. typeof(P .. 'cap') .. ', want a hash')
end
redis.call('ZADD', P .. 'alive', now + tonumber(ARGV[4]), w)
for _, o in ipairs(dead) do
  redis.call('ZREM', P .. 'alive', o)
  redis.call('HDEL', P .. 'cap', o)
  local ok3, busy = pcall(redis.call, 'HGET', P .. 'busy', o)
  if ok3 and num(busy) <= 0 then redis.call('HDEL', P .. 'busy', o) end
end
for _, o in ipairs(done) do
  redis.call('DEL', tkey(o), skey(o), ckey(o))
  redis.call('ZREM', P .. 'done', o)
end
add_counts(now, ARGV[10], bad)
local lost, ext = {}, {}
if #ARGV >= 12 then
  local sk = {}
  for i = 12, #ARGV, 2 do sk[#sk + 1] = skey(ARGV[i]) end
  local raws = redis.call('MGET', unpack(sk))
  local dl = now + tonumber(ARGV[6])
  for i = 12, #ARGV, 2 do
    local s = decode(raws[(i - 10) / 2])
    if s and s.tk == ARGV[i + 1] then
      ext[#ext + 1] = dl; ext[#ext + 1] = ARGV[i]
    else
      lost[#lost + 1] = ARGV[i]
    end
  end
  if #ext > 0 then redis.call('ZADD', P .. 'leases', 'XX', unpack(ext)) end
end
return {lost, bad, paused}
`)

// encodePools writes pools for the heartbeat script.
func encodePools(pools []wire.PoolLayout) string {
	var b strings.Builder
	for i, p := range pools {
		if i > 0 {
			b.WriteByte('/')
		}
		fmt.Fprintf(&b, "%d:%d:", max(p.Pool, 1), max(p.Size, 0))
		for j, l := range p.Levels {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(l))
		}
		b.WriteString(map[bool]string{false: ":0", true: ":1"}[p.Borrow])
		if wire.ValidPoolName(p.Name) {
			b.WriteString(":" + p.Name)
		}
	}
	return b.String()
}

// heartbeat records that hb.Worker is alive with its capacity, extends all
// its leases to now + LeaseDuration and adds its counts to the fleet's
// rates, in one round trip.
func (c engine) Heartbeat(ctx context.Context, hb heartbeat) (*heartbeatReply, error) {
	if hb.TTL <= 0 {
		hb.TTL = c.cfg.LeaseDuration
	}
	args := make([]any, 0, 11+2*len(hb.Leases))
	args = append(args, c.keys.prefix, hb.Worker, c.scriptNow(), hb.TTL.Milliseconds(),
		hb.Capacity, c.cfg.LeaseDuration.Milliseconds(), c.cfg.AgeAfter.Milliseconds(), c.cfg.Levels-1, schemaVersion,
		encodeCounts(hb.Counts, hb.PoolCounts), encodePools(hb.Pools))
	for _, t := range hb.Leases {
		args = append(args, t.ID, t.Token)
	}
	raw, err := c.runWrite(ctx, heartbeatScript, []string{c.keys.alive()}, args...).Slice()
	if err != nil {
		return nil, wrapf(scriptErr(err), "heartbeat")
	}
	reply := &heartbeatReply{}
	if len(raw) > 0 {
		l, _ := raw[0].([]any)
		for _, id := range l {
			if s, ok := id.(string); ok {
				reply.Lost = append(reply.Lost, s)
			}
		}
	}
	if len(raw) > 2 {
		p, _ := raw[2].(string)
		reply.Paused = c.parsePaused(p)
	}
	return reply, nil
}

// deregisterScript removes a worker's record; its busy count goes too once
// it holds no lease (else the release of its last lease removes it).
//
//	KEYS[1] alive  ARGV[1] prefix  ARGV[2] worker
var deregisterScript = redis.NewScript(`
local P, w = ARGV[1], ARGV[2]
redis.call('ZREM', KEYS[1], w)
redis.call('HDEL', P .. 'cap', w)
if tonumber(redis.call('HGET', P .. 'busy', w) or '0') <= 0 then
  redis.call('HDEL', P .. 'busy', w)
end
return 1
`)

// Deregister removes a stopping worker from the fleet, so it is no longer
// counted as having free slots.
func (c engine) Deregister(ctx context.Context, worker string) error {
	if err := deregisterScript.Run(ctx, c.rdb, []string{c.keys.alive()}, c.keys.prefix, worker).Err(); err != nil {
		return wrapf(err, "deregister %s", worker)
	}
	return nil
}

// checkpointScript saves checkpoint bytes under a valid lease and extends
// the lease, since saving is a sign of life.
//
//	KEYS[1] task state
//	ARGV[1] prefix  ARGV[2] id  ARGV[3] token  ARGV[4] data  ARGV[5] now ms or ""
//	ARGV[6] lease ms
//
// Returns the new checkpoint sequence, or the error LEASE_LOST.
var checkpointScript = newScript(`
local id = ARGV[2]
local s, e = sget(id)
if not s then return redis.error_reply(e) end
if s.tk ~= ARGV[3] then return redis.error_reply('` + leaseLostMsg + `') end
local g = guard('leases', 'zset')
if g then return redis.error_reply(g) end
local now = clock(ARGV[5])
local seq = num(s.cps) + 1
s.cps = tostring(seq)
redis.call('SET', ckey(id), ARGV[4])
sput(id, s)
redis.call('ZADD', P .. 'leases', 'XX', now + tonumber(ARGV[6]), id)
return seq
`)

// SaveCheckpoint stores data as the checkpoint of a leased task in one
// round trip, fenced by its lease token: a stale holder gets ErrLeaseLost
// and cannot overwrite newer state. It returns the new sequence number.
// The checkpoint survives retries, preemptions, crashes and shutdowns and
// is deleted when the task is done.
func (c engine) SaveCheckpoint(ctx context.Context, taskID, token string, data []byte) (int64, error) {
	if limit := c.cfg.MaxCheckpointBytes; limit >= 0 && len(data) > limit {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrCheckpointTooLarge, len(data), limit)
	}
	seq, err := c.runWrite(ctx, checkpointScript, []string{c.keys.state(taskID)},
		c.keys.prefix, taskID, token, data, c.scriptNow(), c.cfg.LeaseDuration.Milliseconds()).Int64()
	if err = scriptErr(err); err != nil {
		return 0, wrapf(err, "checkpoint") // the caller knows the task
	}
	return seq, nil
}
