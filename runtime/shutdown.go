package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/overtake/overtake/queue"
	"go.uber.org/zap"
)

// Shutdown stops leasing, reports no free capacity to the fleet, and
// preempts every running task with the cause ErrShutdown (after
// Config.DrainTimeout, if set): each saves its checkpoint and is requeued at
// the head of its level without counting an attempt, so a rolling deploy
// loses no progress. It waits for handlers until ctx ends; tasks whose
// handler is still running then are requeued all the same (their late
// results are fenced off) and Shutdown returns an error naming them. Safe to
// call more than once.
func (r *Runtime) Shutdown(ctx context.Context) error {
	if !r.started.Load() {
		return ErrNotStarted
	}
	r.shutOnce.Do(func() { r.shutErr = r.shutdown(ctx) })
	return r.shutErr
}

func (r *Runtime) shutdown(ctx context.Context) error {
	close(r.stopLease)
	dispatched := make(chan struct{})
	go func() { r.dispatchWG.Wait(); close(dispatched) }()
	select {
	case <-dispatched:
	case <-ctx.Done():
		r.log.Error("shutdown: the dispatcher did not stop in time", zap.Error(ctx.Err()))
	}
	r.mu.Lock()
	r.draining = true
	waiting := r.waiting
	r.waiting = nil
	for _, rn := range waiting {
		delete(r.runs, rn.t.ID)
	}
	r.mu.Unlock()
	if err := r.heartbeat(ctx); err != nil {
		r.log.Warn("could not report shutdown to the fleet", zap.Error(err))
	}
	for _, rn := range waiting { // reserved but never started: straight back
		if err := r.q.Requeue(ctx, rn.t, queue.RequeueShutdown); err != nil {
			rn.log.Error("could not requeue reserved task", zap.Error(err))
		}
	}
	if r.cfg.DrainTimeout > 0 {
		dctx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
		r.waitTasks(dctx)
		cancel()
	}
	r.mu.Lock()
	n := len(r.runs)
	for _, rn := range r.runs {
		rn.cancel(fmt.Errorf("%w: worker %s", ErrShutdown, r.cfg.WorkerID))
	}
	r.mu.Unlock()
	r.log.Info("shutting down: preempting running tasks", zap.Int("running", n))
	var err error
	if !r.waitTasks(ctx) {
		err = r.abandon(ctx)
	}
	r.stopAll()
	r.loops.Wait()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if derr := r.q.Deregister(dctx, r.cfg.WorkerID); derr != nil {
		r.log.Warn("deregister failed", zap.Error(derr))
	}
	r.pool.Release()
	if uerr := r.unregisterCc(); uerr != nil {
		r.log.Warn("unregister concurrency gauge", zap.Error(uerr))
	}
	r.obs.close()
	r.log.Info("runtime stopped", zap.Any("stats", r.Stats()))
	return err
}

// waitTasks waits for every handler to return; false if ctx ended first.
func (r *Runtime) waitTasks(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { r.tasks.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// abandon requeues tasks whose handlers ignored the shutdown, so none is
// lost; if such a handler returns later, its result fails with
// ErrLeaseLost and changes nothing.
func (r *Runtime) abandon(ctx context.Context) error {
	r.mu.Lock()
	var left []*run
	for _, rn := range r.runs {
		if !rn.ending { // an ending run's outcome is being recorded: it owns the transition
			left = append(left, rn)
		}
	}
	r.mu.Unlock()
	ids := make([]string, 0, len(left))
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, rn := range left {
		ids = append(ids, rn.t.ID)
		if err := r.q.Requeue(rctx, rn.t, queue.RequeueShutdown); err != nil {
			rn.log.Error("could not requeue task left running at shutdown; lease recovery will", zap.Error(err))
		}
	}
	return fmt.Errorf("overtake: shutdown: %w; %d handler(s) still running, their tasks requeued: %v",
		ctx.Err(), len(ids), ids)
}
