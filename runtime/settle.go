package runtime

import (
	"github.com/overtake/overtake/internal/outcome"

	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// completer writes the outcome of every run that ends: ack, retry,
// dead letter or requeue (settle), and retries a transition while Redis
// is unreachable, for at most a lease duration (finishWithRetry). A
// successful run's ack rides on the dispatcher's next lease call when its
// slot can be freed early (ack.go). It owns the counts of outcomes
// (RunStats' Processed, Failed, Dead, UnsavedPreemptions, Canceled), the tasks
// whose outcome could not be written during a shutdown, and how long a
// shutdown lets transitions retry. Transitions run in the handlers' pool
// goroutines: the completer has none of its own, and its start is only
// the context it works under.
type completer struct {
	eng        *store.Store
	q          *queue.Client
	log        *zap.Logger
	maxBackoff time.Duration
	redis      *redisWatch
	obs        *observer
	outcomes   *outcomeCounts
	slots      ackSlots
	// dispatched ends once the dispatcher stopped (after it sent the acks
	// queued for its lease calls): no lease call carries an ack after,
	// and no probe looks for Redis.
	dispatched context.Context
	base       context.Context // the runtime's, set by start

	processed, failed, dead atomic.Int64 // RunStats
	canceled                atomic.Int64 // RunStats.Canceled
	// unsaved counts preempted runs that returned with no checkpoint
	// saved during the run (RunStats.UnsavedPreemptions); unsavedLog
	// limits their warning per task type.
	unsaved    atomic.Int64
	unsavedLog unsavedLog
	// shutdownBy is the deadline of Shutdown's context (unix ns) while
	// Shutdown waits, 0 otherwise (no deadline, or Shutdown returned):
	// transitions stop retrying by then (finishWithRetry). stopping says
	// a shutdown began.
	shutdownBy atomic.Int64
	stopping   atomic.Bool
	mu         sync.Mutex
	// unsettled names the tasks whose outcome could not be written during
	// a shutdown (see Shutdown's error).
	unsettled []string
}

// ackSlots is what the completer needs of the slots for an early ack.
type ackSlots interface {
	// carryAck queues rn's ack for the next lease call and frees rn's
	// slot, when it can; wait then returns the ack's result.
	carryAck(rn *run) (wait func(context.Context) error, ok bool)
	// retake makes rn hold its slot again: its carried ack failed, and
	// Redis still counts the lease.
	retake(rn *run)
}

// start sets the context the completer's own calls (the uniqueness lock's
// release) run under: the runtime's, which ends as it stops.
func (c *completer) start(base context.Context) { c.base = base }

// settle decides the task's next state from the handler's error and writes
// it to Redis: ack, retry, dead-letter, requeue or cancel. A task whose
// cancel was requested ends canceled however its lease ends, but by an
// ack: the reply of its transition says so (store.ErrEndedCanceled).
func (c *completer) settle(ctx context.Context, rn *run, err error) {
	t := rn.t
	if err != nil && errors.Is(context.Cause(ctx), ErrTaskTimeout) && !errors.Is(err, ErrTaskTimeout) {
		err = fmt.Errorf("%w after %v: %w", ErrTaskTimeout, t.Timeout, err)
	}
	out := outcome.ClassifyContext(ctx, err)
	runTime := time.Since(rn.started)
	if errors.Is(context.Cause(ctx), queue.ErrLeaseLost) {
		rn.log.Warn("lease lost while running; result dropped", zap.Error(err))
		c.obs.ended(rn, out, runTime, "lease lost")
		return
	}
	if err != nil {
		logPanic(rn, err)
	}
	if out.Action == outcome.ActionDone {
		c.countProcessed(t, false) // before the ack, which may ride on a lease call
	}
	var ferr error
	switch out.Action {
	case outcome.ActionDone:
		ferr = c.ack(rn)
		if rn.log.enabled(zapcore.DebugLevel) { // else its field would cost an allocation
			rn.log.Debug("task done", zap.Duration("run", runTime))
		}
		if ferr == nil {
			c.releaseUnique(rn)
		}
	case outcome.ActionRequeue:
		why := requeueReason(ctx)
		ferr = c.finishWithRetry(rn, "requeue", func(tctx context.Context) error { return c.eng.Requeue(tctx, t, why) })
		if ferr == nil {
			rn.log.Info("task requeued at head of its level", zap.String("reason", string(why)),
				zap.Int64("checkpoint_seq", rn.cp.Seq()), zap.Duration("run", runTime))
		}
		if why == store.RequeuePreempted && rn.cp.SaveCount() == 0 && !errors.Is(ferr, store.ErrEndedCanceled) {
			c.unsavedPreemption(rn)
		}
	case outcome.ActionCancel:
		ferr = c.finishWithRetry(rn, "cancel", func(tctx context.Context) error { return c.eng.CancelRun(tctx, t) })
		if ferr == nil {
			ferr = store.ErrEndedCanceled
		}
	case outcome.ActionDead:
		// The handler chose it (SkipRetry, an unknown type, a malformed
		// payload): an expected outcome, logged as a warning.
		ferr = c.kill(rn, out.Err.Error(), zapcore.WarnLevel)
	default: // retry, retry after
		if !t.RetriesLeft() {
			ferr = c.kill(rn, exhaustedReason(t, out.Err), zapcore.ErrorLevel)
			break
		}
		delay := out.Delay
		if out.Action == outcome.ActionRetry {
			delay = c.q.Config().Backoff(t.Attempt + 1)
		}
		out.Delay = delay // for the span's retry event
		at := c.q.Config().Clock().Add(delay)
		ferr = c.finishWithRetry(rn, "retry", func(tctx context.Context) error { return c.eng.Retry(tctx, t, at, out.Err.Error()) })
		if ferr == nil {
			rn.log.Warn("task failed; retry scheduled", zap.Error(out.Err), zap.Int("attempt", t.Attempt+1),
				zap.Duration("delay", delay))
		}
	}
	if errors.Is(ferr, store.ErrEndedCanceled) {
		// Its cancel was requested: whatever the handler returned, the
		// task ended canceled (the script's reply says so).
		out = outcome.Outcome{Action: outcome.ActionCancel, Err: out.Err}
		ferr = nil
		c.canceledRun(rn, runTime)
	} else if out.Action != outcome.ActionDone && out.Action != outcome.ActionRequeue && out.Action != outcome.ActionCancel {
		c.countProcessed(t, true)
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
	c.obs.ended(rn, out, runTime, "")
}

// logPanic logs the panic err carries, if it does. A function of its own,
// so that a run that returned nil allocates no target for errors.As.
func logPanic(rn *run, err error) {
	var perr *handlers.PanicError
	if errors.As(err, &perr) {
		rn.log.Error("handler panicked", zap.Any("panic", perr.Value), zap.ByteString("stack", perr.Stack))
	}
}

// countProcessed counts a run of t that ended in success or failure. One
// meaning everywhere (RunStats, the fleet's rates, the
// overtake.task.processed and .failed metrics): a run that ended in
// success or failure is processed; one that failed, retried or
// dead-lettered (SkipRetry included), is failed too. A failed run is
// counted once its transition is answered: one that ended canceled
// instead (its cancel was requested) is counted canceled, not failed.
func (c *completer) countProcessed(t *store.Task, failed bool) {
	c.processed.Add(1)
	if failed {
		c.failed.Add(1)
	}
	c.outcomes.count(t.Level, func(c *store.LevelCounts) {
		c.Processed++
		if failed {
			c.Failed++
		}
	})
}

// canceledRun counts and logs a run that ended canceled.
func (c *completer) canceledRun(rn *run, runTime time.Duration) {
	c.canceled.Add(1)
	rn.log.Info("task canceled", zap.Duration("run", runTime))
}

// unsavedPreemption counts and, at most once a minute per task type,
// warns of a run that returned after preemption with no checkpoint saved
// during the run (the checkpoint handle counted no successful Save): its
// next run starts over, from the checkpoint an earlier run saved if any.
// A run that saved in this run is not one; a task that never ran (a
// reserved task requeued by a shutdown) never reaches settle.
func (c *completer) unsavedPreemption(rn *run) {
	c.unsaved.Add(1)
	log, skipped := c.unsavedLog.allow(rn.t.Type, time.Now())
	c.obs.unsavedPreemption(rn, log, skipped)
}

// exhaustedReason is the dead letter's reason of t, whose last run failed
// with err and whose retries ran out: its failed runs against its budget,
// in the words of the overtake command's inspect ("retries exhausted: 3
// failed of at most 3 (the first run and 2 retries): boom").
func exhaustedReason(t *store.Task, err error) string {
	return fmt.Sprintf("retries exhausted: %s: %v", outcome.Attempts(t.Attempt+1, t.MaxRetries), err)
}

// kill dead-letters rn with reason; it is counted (RunStats.Dead) and
// logged at lvl once the dead letter is stored, not before.
func (c *completer) kill(rn *run, reason string, lvl zapcore.Level) error {
	err := c.finishWithRetry(rn, "dead letter", func(tctx context.Context) error { return c.eng.DeadLetter(tctx, rn.t, reason) })
	if err == nil {
		c.dead.Add(1)
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
func (c *completer) finishWithRetry(rn *run, what string, fn func(context.Context) error) error {
	deadline := time.Now().Add(c.q.Config().LeaseDuration)
	bound := deadline // the first attempt's
	bo := backoff{limit: c.maxBackoff}
	moving := false // a refusal while the queue's slot migrates was logged
	for {
		c.redis.awaitProbe(c.dispatched, bound)
		attempt := time.Now().Add(5 * time.Second)
		if bound.Before(attempt) {
			attempt = bound
		}
		ctx, cancel := context.WithDeadline(context.Background(), attempt)
		sent := time.Now()
		err := fn(ctx)
		cancel()
		stale := c.redis.called(err, sent)
		wait := bo.next()
		if stale {
			wait = 0 // Redis answered another call since this one was sent
		}
		bound = c.retryBound(deadline)
		final := errors.Is(err, queue.ErrLeaseLost) || errors.Is(err, store.ErrEndedCanceled)
		if err == nil || final || time.Now().Add(wait).After(bound) {
			if err != nil && !final {
				c.noteUnsettled(rn.t.ID, err)
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
			c.noteUnsettled(rn.t.ID, err)
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
		if !c.redis.down() || c.dispatched.Err() != nil {
			time.Sleep(wait) // else the next round's awaitProbe waits for the probe
		}
	}
}

// retryBound is when a transition that must end by deadline stops
// retrying: by then, or, while Shutdown waits, 100 ms before Shutdown's
// deadline if that is earlier.
func (c *completer) retryBound(deadline time.Time) time.Time {
	if by := c.shutdownBy.Load(); by != 0 {
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

// beginShutdown says a shutdown began; deadline, if ok, is its context's:
// transitions stop retrying a little before it.
func (c *completer) beginShutdown(deadline time.Time, ok bool) {
	c.stopping.Store(true)
	if ok {
		c.shutdownBy.Store(deadline.UnixNano())
	}
}

// shutdownReturned says Shutdown returned while handlers still ran: from
// now on their outcome is recorded under their lease alone, nobody waits
// for it.
func (c *completer) shutdownReturned() { c.shutdownBy.Store(0) }

// noteUnsettled records, during a shutdown, a task whose outcome could
// not be written (Redis unreachable): Shutdown's error names it.
func (c *completer) noteUnsettled(id string, err error) {
	if c.shutdownBy.Load() == 0 && !c.stopping.Load() {
		return
	}
	c.mu.Lock()
	c.unsettled = append(c.unsettled, id+" ("+err.Error()+")")
	c.mu.Unlock()
}

// unsettledError names the tasks whose requeue failed during the shutdown.
func (c *completer) unsettledError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unsettled) == 0 {
		return nil
	}
	return fmt.Errorf("overtake: shutdown: %d task(s) could not be requeued; they are recovered when their lease "+
		"expires: %v", len(c.unsettled), c.unsettled)
}

// countDead counts a task dead-lettered without a run (set aside by a
// lease call).
func (c *completer) countDead() { c.dead.Add(1) }
