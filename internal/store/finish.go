package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// finishScript is lua/finish.lua: it ends leases (ack, retry, dead
// letter, requeue), for one task or a batch, fenced by their tokens.
var finishScript = script("finish.lua")

// Ack marks the task done. Its record is deleted, or kept for
// Config.Retention. A stale holder gets ErrLeaseLost. Acks of concurrent
// callers are grouped into one script call (see acker).
func (c *Store) Ack(ctx context.Context, t *Task) error {
	if s := c.shardOf(t.ID); s != c {
		return s.Ack(ctx, t)
	}
	if err := checkHeld(t, "ack"); err != nil {
		return err
	}
	return c.acks.do(ctx, finishOp{t: t, mode: "ack"})
}

// Retry records a failed attempt with reason and schedules the task to run
// again at at (see Config.Backoff); at is turned into a delay by the
// client's clock and added to Redis's. A stale holder gets ErrLeaseLost.
func (c *Store) Retry(ctx context.Context, t *Task, at time.Time, reason string) error {
	if s := c.shardOf(t.ID); s != c {
		return s.Retry(ctx, t, at, reason)
	}
	defer c.sweep.at(at)
	return c.finishOne(ctx, finishOp{t: t, mode: "retry", a: max(at.Sub(c.now()), 0).Milliseconds(), b: reason})
}

// DeadLetter dead-letters the task with reason. A stale holder gets
// ErrLeaseLost.
func (c *Store) DeadLetter(ctx context.Context, t *Task, reason string) error {
	if s := c.shardOf(t.ID); s != c {
		return s.DeadLetter(ctx, t, reason)
	}
	return c.finishOne(ctx, finishOp{t: t, mode: "dead", a: 0, b: reason})
}

// Requeue puts a running task back at the HEAD of its level with its
// checkpoint, so it resumes before tasks that waited less. It counts a
// preemption for RequeuePreempted and never a failed attempt.
func (c *Store) Requeue(ctx context.Context, t *Task, why RequeueReason) error {
	defer c.touch(t.ID) // once the task is back at its level's head
	if s := c.shardOf(t.ID); s != c {
		return s.Requeue(ctx, t, why)
	}
	return c.finishOne(ctx, finishOp{t: t, mode: "requeue", a: string(why)})
}

// finishOp is one transition of a leased task.
type finishOp struct {
	t    *Task
	mode string
	a    any
	b    string
}

func checkHeld(t *Task, mode string) error {
	if t == nil || t.ID == "" || t.Token == "" {
		return fmt.Errorf("%w: %s of a task without ID or token", ErrLeaseLost, mode)
	}
	return nil
}

func (c *Store) finishOne(ctx context.Context, op finishOp) error {
	if err := checkHeld(op.t, op.mode); err != nil {
		return err
	}
	return c.finishBatch(ctx, []finishOp{op})[0]
}

// finishBatch runs ops in one script call and returns one error per op.
func (c *Store) finishBatch(ctx context.Context, ops []finishOp) []error {
	args := make([]any, 0, 4+6*len(ops))
	args = append(args, c.keys.prefix, c.scriptNow(), c.cfg.Retention.Milliseconds())
	more := make([]string, 0, 3*len(ops))
	for _, op := range ops {
		more = c.keys.taskKeys(more, op.t.ID)
	}
	keys := c.keys.declare(c.sk.finish, more...)
	if c.cfg.Retention <= 0 && !slices.ContainsFunc(ops, func(op finishOp) bool { return op.mode != "ack" }) {
		args = append(args, "") // compact: id, token per ack
		for _, op := range ops {
			args = append(args, op.t.ID, op.t.Token)
		}
		raw, err := slice(c.run(ctx, finishScript, keys, args...))
		return finishResults(ops, raw, err)
	}
	for _, op := range ops {
		a := op.a
		if a == nil {
			a = ""
		}
		args = append(args, op.t.ID, op.t.Token, op.mode, a, op.b, encodeRunSpans(op.t.RunSpans))
	}
	raw, err := slice(c.run(ctx, finishScript, keys, args...))
	return finishResults(ops, raw, err)
}

// finishResults maps a finish call's reply (or error) to one error per op:
// a task that ended canceled (reply 2) gets ErrEndedCanceled, unless the op
// was the cancel.
// With ErrNotReplicated and a reply, each op that the reply says was done
// gets ErrNotReplicated (done on the primary, not confirmed).
func finishResults(ops []finishOp, raw []any, err error) []error {
	errs := make([]error, len(ops))
	unconfirmed := errors.Is(err, ErrNotReplicated) && raw != nil
	for i, op := range ops {
		var e error
		switch {
		case unconfirmed && i < len(raw):
			if n, done := raw[i].(int64); done {
				e = canceledErr(op, n, err)
			} else if v, _ := raw[i].(string); v == "L" {
				e = ErrLeaseLost
			} else {
				e = scriptErr(errors.New(v))
			}
		case err != nil:
			e = scriptErr(err)
		case i >= len(raw):
			e = errors.New("short reply")
		default:
			switch v := raw[i].(type) {
			case int64:
				e = canceledErr(op, v, nil)
			case string:
				if v == "L" {
					e = ErrLeaseLost
				} else {
					e = scriptErr(errors.New(v))
				}
			}
		}
		if e != nil {
			errs[i] = wrapf(e, "%s %s", op.mode, op.t.ID)
		}
	}
	return errs
}

// canceledErr is the error of op, answered n (1 or 2, ended canceled),
// that the call's err otherwise is.
func canceledErr(op finishOp, n int64, err error) error {
	if n == 2 && op.mode != "cancel" {
		return ErrEndedCanceled
	}
	return err
}

// ackResults is finishResults for the acks a lease call carried.
func ackResults(acks []*groupWait[finishOp], raw []any, err error) []error {
	ops := make([]finishOp, len(acks))
	for i, w := range acks {
		ops[i] = w.item
	}
	return finishResults(ops, raw, err)
}

// CarryAck queues the ack of t for the next lease call to carry, without
// sending it, so that the caller can count t's slot free for that lease
// before the ack lands: the lease script runs the acks it carries before
// it leases, and nothing else sends a carried ack except FlushCarried.
// wait returns the ack's outcome. ok is false when a lease call carries
// no acks (Config.Retention): then Ack as usual. On a queue of several
// shards the ack waits for a lease call to its task's shard (a lease also
// calls a shard whose carried acks reach carryFlushAt).
func (c *Store) CarryAck(t *Task) (wait func(context.Context) error, ok bool) {
	if c.cfg.Retention > 0 || checkHeld(t, "ack") != nil {
		return nil, false
	}
	w := c.shardOf(t.ID).carried.queue(finishOp{t: t, mode: "ack"})
	return func(ctx context.Context) error {
		select {
		case err := <-w.done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}, true
}

// FlushCarried sends the acks queued by CarryAck that no lease call took,
// for a caller that will not lease soon (its dispatcher is about to wait,
// or stopped); it returns once they are sent, or once another caller
// sends them.
func (c *Store) FlushCarried(ctx context.Context) {
	_ = c.eachShard(ctx, func(ctx context.Context, _ int, s *Store) error {
		s.carried.flushQueued(ctx)
		return nil
	})
}

// slice is cmd.Slice, but with ErrNotReplicated the reply stays readable:
// the call was done on the primary.
func slice(cmd *redis.Cmd) ([]any, error) {
	raw, err := cmd.Slice()
	if errors.Is(err, ErrNotReplicated) {
		raw, _ = cmd.Val().([]any)
	}
	return raw, err
}
