package runtime

import (
	"context"
	"time"

	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/tasklog"
)

// runContext is a run's context once its checkpoint Handle is made
// (Runtime.prepare): its parent, which answers every other key, with the
// two values a handler looks up, the Handle (ckpt.FromContext, for
// package checkpoint and handlers.SetResult) and its logger
// (tasklog.FromContext, for handlers.Logger), read from the run itself.
// It lives in the run, so it costs no allocation, where a
// context.WithValue for each cost one each. Done, Err, Deadline and the
// cause of a cancel are its parent's: context.Cause and the contexts
// derived from it find the run's cancel context through it.
type runContext struct {
	context.Context
	rn *run
}

// Value returns the run's Handle for ckpt.ContextKey, its logger for
// tasklog.ContextKey, and its parent's value for any other key.
func (c *runContext) Value(key any) any {
	switch key.(type) {
	case ckpt.ContextKey:
		return &c.rn.cp
	case tasklog.ContextKey:
		return &c.rn.log
	}
	return c.Context.Value(key)
}

// detachedContext is a run's context without its cancel and deadline, as
// context.WithoutCancel makes it, for the metrics of a run that may have
// been canceled (observer.ended). It holds only the run, so it costs no
// allocation. Unlike WithoutCancel's, context.Cause of it is the run's.
type detachedContext struct{ rn *run }

// Deadline reports none.
func (detachedContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns nil: it is never canceled.
func (detachedContext) Done() <-chan struct{} { return nil }

// Err returns nil.
func (detachedContext) Err() error { return nil }

// Value returns the run's context's value for key.
func (c detachedContext) Value(key any) any { return c.rn.ctx.Value(key) }

// detached returns rn's context without its cancel and deadline.
func (rn *run) detached() context.Context { return detachedContext{rn} }
