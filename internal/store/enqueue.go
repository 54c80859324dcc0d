package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// enqueueScript stores a new task record and makes it pending or scheduled.
//
//	KEYS[1] task record  KEYS[2] level list (pending) or scheduled set
//	ARGV[1] prefix  ARGV[2] id  ARGV[3] "p" pending | "s" scheduled
//	ARGV[4] now ms or "" (Redis's clock)  ARGV[5] delay ms (scheduled)
//	ARGV[6] level  ARGV[7] preemptible 0/1  ARGV[8] record body
//
// The script stands alone (no prelude to set up on every call). A
// pending task costs TIME, SET NX, RPUSH and, only when its list was empty,
// PUBLISH. Returns 1, or 0 when the ID exists. A write that fails on a
// wrong-typed key is undone and reported as CORRUPT. A scheduled task is
// announced with the message "s" when it is the earliest due, so that idle
// workers learn its due time at once rather than at their next poll.
var enqueueScript = redis.NewScript(`
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
if ARGV[3] == 'p' then
  if not redis.call('SET', KEYS[1], '2|' .. ARGV[6] .. '|' .. ARGV[7] .. '|' .. now .. '|' .. ARGV[8], 'NX') then return 0 end
  local n = redis.pcall('RPUSH', KEYS[2], ARGV[2])
  if type(n) == 'table' then
    redis.call('DEL', KEYS[1])
    local t = redis.call('TYPE', KEYS[2])
    return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' is a ' .. (t.ok or tostring(t)) .. ', want a list')
  end
  if n == 1 then redis.call('PUBLISH', ARGV[1] .. 'wake', ARGV[6]) end
  return 1
end
local P, id, lvl = ARGV[1], ARGV[2], ARGV[6]
for _, kt in ipairs({{KEYS[2], 'zset'}, {P .. 'n', 'hash'}}) do
  local t = redis.call('TYPE', kt[1])
  t = t.ok or t
  if t ~= 'none' and t ~= kt[2] then return redis.error_reply('CORRUPT ' .. kt[1] .. ' is a ' .. t .. ', want a ' .. kt[2]) end
end
if not redis.call('SET', KEYS[1], '2|' .. lvl .. '|' .. ARGV[7] .. '|' .. now .. '|' .. ARGV[8], 'NX') then return 0 end
local due = now + tonumber(ARGV[5])
redis.call('SET', P .. 's:' .. id, cjson.encode({st = 'scheduled', pat = tostring(due), sl = lvl, l = lvl}))
redis.call('ZADD', KEYS[2], due, id)
redis.call('HINCRBY', P .. 'n', 's' .. lvl, 1)
local first = redis.call('ZRANGE', KEYS[2], 0, 0)
if first[1] == id then redis.call('PUBLISH', P .. 'wake', 's') end
return 1
`)

// Enqueue stores t and makes it pending at its level (or scheduled, with
// ProcessAt/ProcessIn). It returns the stored task, with its ID.
//
// Enqueue records the producer span "enqueue <queue>" (a child of the span
// in ctx) with Config.TracerProvider and stores its trace context in the
// record's Headers, so every run of the task joins the producer's trace.
func (c *Store) Enqueue(ctx context.Context, t *Task, opts ...Option) (_ *Task, err error) {
	nt, ks, args, span, err := c.prepare(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	defer func() { endEnqueue(span, err) }()
	if err := c.enqs.do(ctx, &enqWait{nt: nt, keys: ks, args: args}); err != nil {
		return nil, err
	}
	return nt, nil
}

// prepare validates t, applies opts to a copy, starts its producer span
// (whose trace context goes into the copy's Headers) and builds the script
// call. The caller ends the span once the record is written; on error no
// span was started.
func (c *Store) prepare(ctx context.Context, t *Task, opts []Option) (*Task, []string, []any, trace.Span, error) {
	if t == nil || t.Type == "" {
		return nil, nil, nil, nil, fmt.Errorf("%w: a task needs a type", ErrInvalidTask)
	}
	nt := *t
	for _, o := range opts {
		if err := o(c, &nt); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	if nt.MaxRetries < NoRetries || nt.Timeout < 0 {
		return nil, nil, nil, nil, fmt.Errorf("%w: MaxRetries %d (want NoRetries, 0 for the default, or more) or negative Timeout %v",
			ErrInvalidTask, nt.MaxRetries, nt.Timeout)
	}
	if nt.MaxRetries == 0 {
		nt.MaxRetries = DefaultMaxRetries
	}
	if nt.Level < 0 || nt.Level >= c.cfg.Levels {
		return nil, nil, nil, nil, fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, nt.Level, c.cfg.Levels-1)
	}
	if limit := c.cfg.MaxPayloadBytes; limit >= 0 && len(nt.Payload) > limit {
		return nil, nil, nil, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPayloadTooLarge, len(nt.Payload), limit)
	}
	if nt.ID == "" {
		nt.ID = newID()
	}
	if nt.ID == anchorMember {
		return nil, nil, nil, nil, fmt.Errorf("%w: the ID %q is reserved", ErrInvalidTask, nt.ID)
	}
	_, span := c.startEnqueue(ctx, &nt)
	now := c.now()
	state, mode, dest := StatePending, "p", c.keys.pending(nt.Level)
	var delay time.Duration
	if nt.ProcessAt.After(now) {
		state, mode, dest, delay = StateScheduled, "s", c.keys.scheduled(), nt.ProcessAt.Sub(now)
		c.sweep.at(nt.ProcessAt)
	} else {
		nt.ProcessAt = now
	}
	body, err := encodeBody(&nt)
	if err != nil {
		endEnqueue(span, err)
		return nil, nil, nil, nil, err
	}
	prb := "1"
	if nt.NotPreemptible {
		prb = "0"
	}
	nt.State, nt.EnqueuedAt, nt.ReadyAt, nt.OriginalLevel, nt.AgedAt = state, now, now, nt.Level, time.Time{}
	args := []any{c.keys.prefix, nt.ID, mode, c.scriptNow(), delay.Milliseconds(), nt.Level, prb, body}
	return &nt, []string{c.keys.task(nt.ID), dest}, args, span, nil
}
