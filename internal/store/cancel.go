package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Cancelling a task (Store.Cancel, lua/cancel.lua). A task that waits
// (pending, scheduled, retry) ends canceled at once. A running task is
// marked in its state (F_CANCEL in lua/fields.lua), durably: every way
// its lease can end reads the mark, so it never runs again however the
// lease ends (its handler returns, its worker dies, it is preempted,
// requeued or retried), unless its handler succeeded, which then wins.
// The holder learns of the mark from the message 'x'<id> on the wake
// channel at once, and from its next heartbeat's reply at the latest
// (HeartbeatReply.Canceled).

// Errors of Cancel and of the transitions of a task whose cancel was
// requested.
var (
	// ErrTaskFinished is returned by Cancel for a task that is done or
	// dead: nothing changed. The message names the state.
	ErrTaskFinished = errors.New("overtake: task already finished")
	// ErrEndedCanceled is returned by Retry, DeadLetter and Requeue when
	// the task's cancel was requested: it ended canceled instead, and
	// will not run again.
	ErrEndedCanceled = errors.New("overtake: task ended canceled: its cancel was requested")
)

// cancelScript is lua/cancel.lua: it cancels a task by its ID.
var cancelScript = script("cancel.lua")

// Cancel cancels task id. A pending, scheduled or retrying task is taken
// out of its list or set and ends canceled now (kept for
// Config.Retention, counted in LevelStats.Canceled); a running task's
// cancel is requested, and the task ends canceled as its lease ends
// unless its handler succeeds first. A task canceled already is no error
// (the call is idempotent). It returns the state the task was in:
// StatePending, StateScheduled, StateRetry, StateActive (the cancel is
// requested) or StateCanceled. It fails with ErrTaskNotFound for an
// unknown ID and ErrTaskFinished for a task done or dead.
func (c *Store) Cancel(ctx context.Context, id string) (State, error) {
	if s := c.shardOf(id); s != c {
		return s.Cancel(ctx, id)
	}
	if id == "" {
		return "", wrapf(fmt.Errorf("%w: empty ID", ErrInvalidTask), "cancel")
	}
	ks := append([]string{c.keys.state(id), c.keys.task(id), c.keys.checkpoint(id)}, c.sk.cancel...)
	u, err := c.uniqueLockOf(ctx, id)
	if err != nil {
		return "", wrapf(err, "cancel %s", id)
	}
	if u != "" {
		ks = append(ks, u)
	}
	raw, err := slice(c.run(ctx, cancelScript, c.keys.declare(ks),
		c.keys.prefix, id, c.scriptNow(), c.cfg.Retention.Milliseconds()))
	if err != nil && (!errors.Is(err, ErrNotReplicated) || len(raw) == 0) {
		return "", wrapf(scriptErr(err), "cancel %s", id)
	}
	if len(raw) == 0 {
		return "", wrapf(errors.New("empty reply"), "cancel %s", id)
	}
	if err != nil {
		err = wrapf(err, "cancel %s", id) // done on the primary, not confirmed
	}
	code, _ := raw[0].(int64)
	var was string
	if len(raw) > 1 {
		was, _ = raw[1].(string)
	}
	switch code {
	case 1:
		return State(was), err
	case 2:
		return StateActive, err
	case 3:
		return StateCanceled, nil
	case 0:
		return "", wrapf(fmt.Errorf("%w: %q", ErrTaskNotFound, id), "cancel")
	default:
		return State(was), wrapf(fmt.Errorf("%w: %q is %s", ErrTaskFinished, id, was), "cancel")
	}
}

// CanceledFromMessage reads a wake message that a cancel published: the
// ID of the running task whose cancel was requested ('x'<id>, see
// lua/cancel.lua).
func (c *Store) CanceledFromMessage(payload string) (id string, ok bool) {
	id, ok = strings.CutPrefix(payload, "x")
	return id, ok && id != ""
}

// CancelRun ends a running task canceled under its lease, after its
// handler returned because its cancel was requested (a stale holder gets
// ErrLeaseLost): as a cancel, it needs no request in Redis.
func (c *Store) CancelRun(ctx context.Context, t *Task) error {
	if s := c.shardOf(t.ID); s != c {
		return s.CancelRun(ctx, t)
	}
	return c.finishOne(ctx, finishOp{t: t, mode: "cancel"})
}
