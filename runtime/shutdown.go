package runtime

import (
	"errors"

	"github.com/overtake/overtake/handlers"

	"github.com/overtake/overtake/internal/store"

	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Shutdown stops leasing, reports no free capacity to the fleet, and
// preempts every running task with the cause handlers.ErrShutdown (after
// Config.DrainTimeout, if set): each saves its checkpoint and is requeued at
// the head of its level without counting an attempt, so a rolling deploy
// loses no progress. Handlers are told at once (or when the drain ends),
// before any Redis call, so a Redis that is down or slow does not delay
// them. Every Redis call it makes, the requeues included, is bounded by
// ctx.
//
// It waits for handlers until ctx ends. A task whose handler is still
// running then is never requeued behind its back (another worker would run
// it while it still runs): its lease is kept and extended by the heartbeat
// until the handler returns, and the handler's outcome is then recorded
// like any other (acked if it succeeded, retried or dead-lettered if it
// failed, requeued if it gave way), with the usual retries while Redis is
// unreachable, for at most a lease duration; if the process exits first,
// the lease expires and the task is recovered after LeaseDuration. For
// such tasks Shutdown returns when ctx ends, without waiting for their
// outcome: an error that wraps ctx.Err() and names them, and the runtime
// finishes stopping in the background once they return. It also names the
// tasks whose requeue failed (Redis unreachable): they are recovered after
// their lease expires. Safe to call more than once; later calls return the
// first one's result.
func (r *Runtime) Shutdown(ctx context.Context) error {
	if !r.life.started.Load() {
		return ErrNotStarted
	}
	return r.life.shutdownOnce(func() error { return r.shutdown(ctx) })
}

func (r *Runtime) shutdown(ctx context.Context) error {
	begin := time.Now()
	r.done.beginShutdown(ctx.Deadline())
	r.slots.drain() // from now on every heartbeat reports no capacity
	r.dispatch.stopLeasing()
	if r.cfg.DrainTimeout == 0 {
		r.preemptAll() // before any Redis call
	}
	// No free capacity to the fleet, beside the rest: with Redis down this
	// call may take the whole of ctx.
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		if err := r.beats.beat(ctx); err != nil {
			r.log.Warn("could not report shutdown to the fleet", zap.Error(err))
		}
	}()
	if !r.dispatch.wait(ctx) {
		r.log.Error("shutdown: the dispatcher did not stop in time", zap.Error(ctx.Err()))
	}
	for _, rn := range r.slots.takeWaiting() { // reserved but never started: straight back
		switch err := r.eng.Requeue(ctx, rn.t, store.RequeueShutdown); {
		case errors.Is(err, store.ErrEndedCanceled):
			rn.log.Info("reserved task ended canceled: its cancel was requested before it started")
		case err != nil:
			rn.log.Error("could not requeue reserved task", zap.Error(err))
		}
	}
	if r.cfg.DrainTimeout > 0 {
		dctx, cancel := context.WithDeadline(ctx, begin.Add(r.cfg.DrainTimeout))
		r.workers.wait(dctx)
		cancel()
		r.preemptAll()
	}
	if !r.workers.wait(ctx) {
		// From now on the handlers that return record their outcome under
		// their lease alone (finishWithRetry): nobody waits for it here.
		r.done.shutdownReturned()
		err := r.stillRunning(ctx)
		go func() { // finish stopping once the stuck handlers return
			r.workers.tasks.Wait()
			<-reported
			r.teardown(context.Background())
		}()
		return err
	}
	<-reported
	r.teardown(ctx)
	return r.done.unsettledError()
}

// preemptAll tells every handler, those about to start included, to stop
// with handlers.ErrShutdown.
func (r *Runtime) preemptAll() {
	n := r.slots.count()
	r.life.stopRuns(fmt.Errorf("%w: worker %s", handlers.ErrShutdown, r.cfg.WorkerID))
	r.log.Info("shutting down: preempting running tasks", zap.Int("running", n))
}

// teardown stops the loops, leaves the fleet and releases the pool, with
// Redis calls bounded by ctx (and 2 s).
func (r *Runtime) teardown(ctx context.Context) {
	r.life.stopAll()
	r.dispatch.wait(context.Background())
	r.life.rejoins.Wait()
	r.wakes.stop()
	r.beats.stop()
	r.sched.stop()
	r.scaler.stop()
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	r.beats.farewell(dctx)
	r.workers.release()
	if uerr := r.life.unregisterCc(); uerr != nil {
		r.log.Warn("unregister concurrency gauge", zap.Error(uerr))
	}
	r.obs.close()
	r.log.Info("runtime stopped", zap.Any("stats", r.Stats()))
}

// stillRunning names the tasks whose handlers ignored the shutdown past
// ctx: their leases are kept (see Shutdown), nothing is requeued behind
// their back.
func (r *Runtime) stillRunning(ctx context.Context) error {
	stuck, writing := r.slots.unfinished()
	for _, id := range stuck {
		r.log.Warn("handler still running at the shutdown deadline; its lease is kept until it returns", zap.String("task_id", id))
	}
	errs := []error{fmt.Errorf("overtake: shutdown: %w", ctx.Err())}
	if len(stuck) > 0 {
		errs = append(errs, fmt.Errorf("%d handler(s) still running, their leases kept and extended until they "+
			"return (then their outcome is recorded: acked, retried or requeued), or recovered after the lease "+
			"duration if this process exits: %v", len(stuck), stuck))
	}
	if len(writing) > 0 {
		errs = append(errs, fmt.Errorf("%d task(s) could not be requeued yet (their outcome is still being written); "+
			"if that fails they are recovered when their lease expires: %v", len(writing), writing))
	}
	if uerr := r.done.unsettledError(); uerr != nil {
		errs = append(errs, uerr)
	}
	return joinSemicolon(errs)
}

// joinSemicolon joins errs into one error, on one line, that wraps them all.
func joinSemicolon(errs []error) error {
	format := strings.Repeat("%w; ", len(errs))
	args := make([]any, len(errs))
	for i, e := range errs {
		args[i] = e
	}
	return fmt.Errorf(strings.TrimSuffix(format, "; "), args...)
}
