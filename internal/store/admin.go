package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotDead is returned by RequeueDead and DeleteDead for a task that
// exists but is not dead-lettered: the call changed nothing.
var ErrNotDead = errors.New("overtake: task is not dead-lettered")

// deadAdminScript takes a dead-lettered task out of the dead set: back to
// the tail of its level (requeue) or gone (delete). It is fenced by the
// task's state: only a record in state dead that is in the dead set is
// touched, so it cannot race a worker or a second admin.
//
//	KEYS[1] task record
//	ARGV[1] prefix  ARGV[2] id  ARGV[3] now ms  ARGV[4] mode: requeue | delete
//	ARGV[5] levels  ARGV[6] "1" to drop the checkpoint (requeue)
//
// Returns {1, level} on success, {0} when there is no record (a stale dead
// entry is removed), {-1, state} when the task is not dead, {-2, level}
// when the record's level is unusable (requeue only; delete it instead).
var deadAdminScript = newScript(`
local id, now, mode, levels = ARGV[2], clock(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local indead = redis.call('ZSCORE', P .. 'dead', id)
local s, e = sget(id)
if not s then return redis.error_reply(e) end
if not next(s) and redis.call('EXISTS', tkey(id)) == 0 then
  if indead then redis.call('ZREM', P .. 'dead', id) end
  return {0}
end
if s.st ~= 'dead' or not indead then return {-1, s.st or 'pending'} end
local g = guard('n', 'hash', 'dead', 'zset')
if g then return redis.error_reply(g) end
local raw = level_of(s, hdr_of(id))
-- to_dead counted the task under its level, or '0' without one.
local counted = raw or '0'
local lvl = tonumber(raw or '')
if mode == 'requeue' then
  if not lvl or lvl ~= math.floor(lvl) or lvl < 0 or lvl >= levels or redis.call('EXISTS', tkey(id)) == 0 then
    return {-2, raw or ''}
  end
  g = guard('p:' .. lvl, 'list')
  if g then return redis.error_reply(g) end
end
redis.call('ZREM', P .. 'dead', id)
if tonumber(redis.call('HINCRBY', P .. 'n', 'd' .. counted, -1)) < 0 then
  redis.call('HSET', P .. 'n', 'd' .. counted, 0)
end
if mode == 'delete' then
  redis.call('DEL', tkey(id), skey(id), ckey(id), P .. 'x:' .. id, P .. 'xs:' .. id)
  return {1, counted}
end
s.att, s.fin = nil, nil
if ARGV[6] == '1' then redis.call('DEL', ckey(id)) end
push_pending(id, s, lvl, now, false)
return {1, lvl}
`)

// RequeueDeadOptions tunes RequeueDead.
type RequeueDeadOptions struct {
	// ResetCheckpoint drops the task's saved checkpoint, so it starts over
	// instead of resuming from where its last attempt stopped. The
	// checkpoint sequence keeps counting.
	ResetCheckpoint bool
}

// RequeueDead moves dead-lettered task id back to the TAIL of its level
// with a fresh retry budget (Attempt 0). Its last error is kept for
// reference, and so is its checkpoint unless opts.ResetCheckpoint. It
// fails with ErrTaskNotFound when there is no record, ErrNotDead when the
// task is not dead-lettered, and ErrMalformedRecord when the record has no
// usable level (DeleteDead it instead). Nothing changes on failure.
func (c *Store) RequeueDead(ctx context.Context, id string, opts RequeueDeadOptions) error {
	reset := "0"
	if opts.ResetCheckpoint {
		reset = "1"
	}
	return c.deadAdmin(ctx, id, "requeue", reset)
}

// DeleteDead deletes dead-lettered task id and its record. It fails with
// ErrTaskNotFound when there is no record and ErrNotDead when the task is
// not dead-lettered; nothing changes then.
func (c *Store) DeleteDead(ctx context.Context, id string) error {
	return c.deadAdmin(ctx, id, "delete", "0")
}

func (c *Store) deadAdmin(ctx context.Context, id, mode, reset string) error {
	if id == "" {
		return wrapf(fmt.Errorf("%w: empty ID", ErrInvalidTask), "%s dead", mode)
	}
	raw, err := c.run(ctx, deadAdminScript, []string{c.keys.state(id)},
		c.keys.prefix, id, c.scriptNow(), mode, c.cfg.Levels, reset).Slice()
	if err != nil {
		return wrapf(scriptErr(err), "%s dead %s", mode, id)
	}
	code, _ := raw[0].(int64)
	var detail any
	if len(raw) > 1 {
		detail = raw[1]
	}
	switch code {
	case 1:
		return nil
	case 0:
		return wrapf(fmt.Errorf("%w: %q", ErrTaskNotFound, id), "%s dead", mode)
	case -1:
		return wrapf(fmt.Errorf("%w: %q is %v", ErrNotDead, id, detail), "%s dead", mode)
	default:
		return wrapf(fmt.Errorf("%w: task %q has level %q, outside 0..%d", ErrMalformedRecord, id, detail,
			c.cfg.Levels-1), "%s dead", mode)
	}
}
