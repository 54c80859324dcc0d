package queue

import (
	"context"
	"fmt"
	"time"
)

// finishScript ends a lease: ack, retry, dead-letter or requeue. It first
// checks the lease token, so a stale holder changes nothing (fencing).
//
//	KEYS[1] task record
//	ARGV[1] prefix  ARGV[2] id  ARGV[3] token  ARGV[4] now ms
//	ARGV[5] mode: ack | retry | dead | requeue
//	ack:     ARGV[6] retention ms
//	retry:   ARGV[6] due ms       ARGV[7] error
//	dead:    ARGV[7] reason
//	requeue: ARGV[6] "preempt" counts a preemption, anything else does not
//	ARGV[8] the task's run spans (Task.RunSpans), stored unless empty or ack
//
// Returns 1, or the error LEASE_LOST.
var finishScript = newScript(`
local id, now, mode = ARGV[2], tonumber(ARGV[4]), ARGV[5]
local h = KEYS[1]
if not check_token(h, ARGV[3]) then return redis.error_reply('` + leaseLostMsg + `') end
local lvl = release(id, h)
if mode ~= 'ack' and ARGV[8] ~= '' then redis.call('HSET', h, 'rsp', ARGV[8]) end
if mode == 'ack' then
  local ret = tonumber(ARGV[6])
  if ret > 0 then
    redis.call('HSET', h, 'state', 'done', 'fin', now)
    redis.call('HDEL', h, 'cp')
    redis.call('ZADD', P .. 'done', now + ret, id)
  else
    redis.call('DEL', h)
  end
  local old = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', now, 'LIMIT', 0, 20)
  for _, o in ipairs(old) do
    redis.call('DEL', tkey(o))
    redis.call('ZREM', P .. 'done', o)
  end
elseif mode == 'retry' then
  incr(h, 'att')
  redis.call('HSET', h, 'state', 'retry', 'err', ARGV[7], 'pat', ARGV[6])
  redis.call('ZADD', P .. 'scheduled', ARGV[6], id)
  redis.call('HSET', h, 'slv', lvl or '0') -- the count promote takes back
  redis.call('HINCRBY', P .. 'cnt', 's' .. (lvl or '0'), 1)
elseif mode == 'dead' then
  incr(h, 'att')
  to_dead(id, h, now, ARGV[7])
else
  if ARGV[6] == 'preempt' then incr(h, 'pre') end
  if lvl then
    push_pending(id, h, lvl, now, true)
  else
    to_dead(id, h, now, 'malformed record: no level')
  end
end
return 1
`)

// RequeueReason says why a running task goes back to its level.
type RequeueReason string

// Reasons for Requeue. Only RequeuePreempted counts a preemption; none
// counts a failed attempt.
const (
	RequeuePreempted RequeueReason = "preempt"  // gave way to more urgent work
	RequeueShutdown  RequeueReason = "shutdown" // its worker is shutting down
	RequeueYield     RequeueReason = "yield"    // the handler asked to be requeued
)

// Ack marks the task done. Its record is deleted, or kept for
// Config.Retention. A stale holder gets ErrLeaseLost.
func (c *Client) Ack(ctx context.Context, t *Task) error {
	return c.finish(ctx, t, "ack", c.cfg.Retention.Milliseconds(), "")
}

// Retry records a failed attempt with reason and schedules the task to run
// again at at (see Config.Backoff). A stale holder gets ErrLeaseLost.
func (c *Client) Retry(ctx context.Context, t *Task, at time.Time, reason string) error {
	return c.finish(ctx, t, "retry", at.UnixMilli(), reason)
}

// Kill dead-letters the task with reason. A stale holder gets ErrLeaseLost.
func (c *Client) Kill(ctx context.Context, t *Task, reason string) error {
	return c.finish(ctx, t, "dead", 0, reason)
}

// Requeue puts a running task back at the HEAD of its level with its
// checkpoint, so it resumes before tasks that waited less. It counts a
// preemption for RequeuePreempted and never a failed attempt.
func (c *Client) Requeue(ctx context.Context, t *Task, why RequeueReason) error {
	return c.finish(ctx, t, "requeue", string(why), "")
}

func (c *Client) finish(ctx context.Context, t *Task, mode string, a6 any, a7 string) error {
	if t == nil || t.ID == "" || t.Token == "" {
		return fmt.Errorf("%w: %s of a task without ID or token", ErrLeaseLost, mode)
	}
	err := finishScript.Run(ctx, c.rdb, []string{c.keys.task(t.ID)},
		c.keys.prefix, t.ID, t.Token, c.cfg.Clock().UnixMilli(), mode, a6, a7, encodeRunSpans(t.RunSpans)).Err()
	if err = scriptErr(err); err != nil {
		return fmt.Errorf("overtake: %s %s: %w", mode, t.ID, err)
	}
	return nil
}
