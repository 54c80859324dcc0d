package runtime

import (
	"github.com/overtake/overtake/internal/outcome"

	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// settle decides the task's next state from the handler's error and writes
// it to Redis: ack, retry, dead-letter or requeue.
func (r *Runtime) settle(ctx context.Context, rn *run, err error) {
	t := rn.t
	if err != nil && errors.Is(context.Cause(ctx), ErrTaskTimeout) && !errors.Is(err, ErrTaskTimeout) {
		err = fmt.Errorf("%w after %v: %w", ErrTaskTimeout, t.Timeout, err)
	}
	out := outcome.ClassifyContext(ctx, err)
	runTime := time.Since(rn.started)
	if errors.Is(context.Cause(ctx), queue.ErrLeaseLost) {
		rn.log.Warn("lease lost while running; result dropped", zap.Error(err))
		r.obs.ended(rn, out, runTime, "lease lost")
		return
	}
	var perr *handlers.PanicError
	if errors.As(err, &perr) {
		rn.log.Error("handler panicked", zap.Any("panic", perr.Value), zap.ByteString("stack", perr.Stack))
	}
	if out.Action != outcome.ActionRequeue {
		// One meaning everywhere (RunStats, the fleet's rates, the
		// overtake.task.processed and .failed metrics): a run that ended in
		// success or failure is processed; one that failed, retried or
		// dead-lettered (SkipRetry included), is failed too.
		failed := out.Action != outcome.ActionDone
		r.stats.processed.Add(1)
		if failed {
			r.stats.failed.Add(1)
		}
		r.outcomes.count(t.Level, func(c *store.LevelCounts) {
			c.Processed++
			if failed {
				c.Failed++
			}
		})
	}
	var ferr error
	switch out.Action {
	case outcome.ActionDone:
		ferr = r.ack(rn)
		rn.log.Debug("task done", zap.Duration("run", runTime))
		if ferr == nil {
			r.releaseUnique(rn)
		}
	case outcome.ActionRequeue:
		why := requeueReason(ctx)
		ferr = r.finishWithRetry(rn, "requeue", func(c context.Context) error { return r.eng.Requeue(c, t, why) })
		if ferr == nil {
			rn.log.Info("task requeued at head of its level", zap.String("reason", string(why)),
				zap.Int64("checkpoint_seq", rn.cp.Seq()), zap.Duration("run", runTime))
		}
	case outcome.ActionDead:
		// The handler chose it (SkipRetry, an unknown type, a malformed
		// payload): an expected outcome, logged as a warning.
		ferr = r.kill(rn, out.Err.Error(), zapcore.WarnLevel)
	default: // retry, retry after
		if !t.RetriesLeft() {
			ferr = r.kill(rn, fmt.Sprintf("retries exhausted after %d attempts: %v", t.Attempt+1, out.Err), zapcore.ErrorLevel)
			break
		}
		delay := out.Delay
		if out.Action == outcome.ActionRetry {
			delay = r.q.Config().Backoff(t.Attempt + 1)
		}
		out.Delay = delay // for the span's retry event
		at := r.q.Config().Clock().Add(delay)
		ferr = r.finishWithRetry(rn, "retry", func(c context.Context) error { return r.eng.Retry(c, t, at, out.Err.Error()) })
		if ferr == nil {
			rn.log.Warn("task failed; retry scheduled", zap.Error(out.Err), zap.Int("attempt", t.Attempt+1),
				zap.Duration("delay", delay))
		}
	}
	switch {
	case ferr == nil:
	case errors.Is(ferr, queue.ErrLeaseLost):
		rn.log.Warn("lease lost before the task's outcome was recorded; another worker owns it",
			zap.String("action", out.Action.String()), zap.Error(ferr))
	default:
		rn.log.Error("could not record the task's outcome; its lease will expire and it will be recovered",
			zap.String("action", out.Action.String()), zap.Error(ferr))
	}
	r.obs.ended(rn, out, runTime, "")
}

// kill dead-letters rn with reason; it is counted (RunStats.Dead) and
// logged at lvl once the dead letter is stored, not before.
func (r *Runtime) kill(rn *run, reason string, lvl zapcore.Level) error {
	err := r.finishWithRetry(rn, "dead letter", func(c context.Context) error { return r.eng.DeadLetter(c, rn.t, reason) })
	if err == nil {
		r.stats.dead.Add(1)
		rn.log.Log(lvl, "task dead-lettered", zap.String("reason", reason))
	}
	return err
}

// finishWithRetry runs a transition, retrying with backoff while Redis is
// unreachable, for at most one lease duration: after that the lease has
// expired and recovery owns the task. queue.ErrLeaseLost is final, and so
// are queue.ErrCorrupt and queue.ErrSchema: a key of the wrong type (or
// data of another schema) is an operator's to fix, not an outage, and the
// script changed nothing.
//
// While Shutdown waits, retries stop a little before its deadline, so
// that the failure is in Shutdown's error; the first attempt is never cut
// short by it, and once Shutdown has returned (a handler that outlived
// it) only the lease bounds the transition: a late handler's outcome is
// still written while its lease is held.
func (r *Runtime) finishWithRetry(rn *run, what string, fn func(context.Context) error) error {
	deadline := time.Now().Add(r.q.Config().LeaseDuration)
	bound := deadline // the first attempt's
	bo := backoff{limit: r.cfg.MaxRedisBackoff}
	moving := false // a refusal while the queue's slot migrates was logged
	for {
		r.awaitRedis(bound)
		attempt := time.Now().Add(5 * time.Second)
		if bound.Before(attempt) {
			attempt = bound
		}
		ctx, cancel := context.WithDeadline(context.Background(), attempt)
		sent := time.Now()
		err := fn(ctx)
		cancel()
		stale := r.redis.called(err, sent)
		wait := bo.next()
		if stale {
			wait = 0 // Redis answered another call since this one was sent
		}
		bound = r.retryBound(deadline)
		if err == nil || errors.Is(err, queue.ErrLeaseLost) || time.Now().Add(wait).After(bound) {
			if err != nil && !errors.Is(err, queue.ErrLeaseLost) {
				r.noteUnsettled(rn.t.ID, err)
			}
			return err
		}
		if errors.Is(err, queue.ErrNotReplicated) {
			// Done on the primary, not confirmed by the replicas: sending
			// it again would find the lease gone.
			rn.log.Warn("the task's "+what+" was not confirmed by the replicas", zap.Error(err))
			return nil
		}
		if errors.Is(err, queue.ErrCorrupt) || errors.Is(err, queue.ErrSchema) {
			rn.log.Error("corrupt queue data; the task's "+what+" was refused", zap.Error(err))
			r.noteUnsettled(rn.t.ID, err)
			return err
		}
		switch {
		case !store.SlotMoving(err):
			rn.log.Warn("redis unavailable; retrying "+what, zap.Error(err), zap.Duration("backoff", wait))
		case !moving:
			// Once per transition: the migration refuses every try until
			// it ends, and each try changes nothing.
			rn.log.Warn("the queue's cluster slot is migrating; retrying "+what, zap.Error(err))
			moving = true
		}
		if !r.redis.down() || r.dispatchCtx.Err() != nil {
			time.Sleep(wait) // else the next round's awaitRedis waits for the probe
		}
	}
}

// awaitRedis waits, while an outage lasts and the dispatcher probes, until
// the probe finds Redis again, but not past bound: a call made meanwhile
// would only add connection attempts (go-redis's, up to its
// DialerRetries each) to the probe's one. It reports whether it waited;
// not once the dispatcher stopped (a handler that outlived Shutdown):
// then nothing probes, and the caller tries on its own backoff.
func (r *Runtime) awaitRedis(bound time.Time) bool {
	ended := r.redis.endedCh() // before down(): closed if it ends after
	if !r.redis.down() || r.dispatchCtx.Err() != nil {
		return false
	}
	timer := time.NewTimer(time.Until(bound))
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
	case <-r.dispatchCtx.Done():
	}
	return true
}

// retryBound is when a transition that must end by deadline stops
// retrying: by then, or, while Shutdown waits, 100 ms before Shutdown's
// deadline if that is earlier.
func (r *Runtime) retryBound(deadline time.Time) time.Time {
	if by := r.shutdownBy.Load(); by != 0 {
		if end := time.Unix(0, by).Add(-100 * time.Millisecond); end.Before(deadline) {
			return end
		}
	}
	return deadline
}

// requeueReason says why a run that ended in a requeue stopped, from the
// cause of its context: preempted, shutdown, or yield (the handler asked).
// The requeue script, the log line and the span's requeued event all use it.
func requeueReason(ctx context.Context) store.RequeueReason {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, handlers.ErrPreempted):
		return store.RequeuePreempted
	case errors.Is(cause, handlers.ErrShutdown):
		return store.RequeueShutdown
	}
	return store.RequeueYield
}
