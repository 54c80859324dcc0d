package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotDead is returned by RequeueDead and DeleteDead for a task that
// exists but is not dead-lettered: the call changed nothing.
var ErrNotDead = errors.New("overtake: task is not dead-lettered")

// deadAdminScript is lua/dead_admin.lua: it takes a dead-lettered task
// out of the dead set, back to its level or gone.
var deadAdminScript = script("dead_admin.lua")

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
	if s := c.shardOf(id); s != c {
		return s.RequeueDead(ctx, id, opts)
	}
	reset := "0"
	if opts.ResetCheckpoint {
		reset = "1"
	}
	return c.deadAdmin(ctx, id, "requeue", reset)
}

// DeleteDead deletes dead-lettered task id: its record, its state, its
// checkpoint, then its result (SaveResult), so the task is gone for
// Inspect. A unique task's lock (Unique) is released with it while it
// still names the task, as asynq does: the task is gone, so an equal one
// may be enqueued again. RequeueDead keeps the lock. It fails with ErrTaskNotFound when there is no record and
// ErrNotDead when the task is not dead-lettered; nothing changes then. If
// only deleting the result fails (the error says so), the task is gone
// and the result expires with its retention.
func (c *Store) DeleteDead(ctx context.Context, id string) error {
	if s := c.shardOf(id); s != c {
		return s.DeleteDead(ctx, id)
	}
	if err := c.deadAdmin(ctx, id, "delete", "0"); err != nil {
		return err
	}
	if err := c.rdb.Del(ctx, c.keys.result(id)).Err(); err != nil {
		return wrapf(err, "delete dead %s: its result", id)
	}
	return nil
}

func (c *Store) deadAdmin(ctx context.Context, id, mode, reset string) error {
	if id == "" {
		return wrapf(fmt.Errorf("%w: empty ID", ErrInvalidTask), "%s dead", mode)
	}
	ks := append([]string{c.keys.state(id), c.keys.task(id), c.keys.checkpoint(id), c.keys.prefix + "x:" + id,
		c.keys.prefix + "xs:" + id}, c.sk.deadAdmin...)
	lock := "0"
	if mode == "delete" {
		u, err := c.uniqueLockOf(ctx, id)
		if err != nil {
			return wrapf(err, "%s dead %s", mode, id)
		}
		if u != "" {
			ks, lock = append(ks, u), "1"
		}
	}
	raw, err := c.run(ctx, deadAdminScript, c.keys.declare(ks),
		c.keys.prefix, id, c.scriptNow(), mode, c.cfg.Levels, reset, lock).Slice()
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
