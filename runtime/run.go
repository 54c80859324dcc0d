package runtime

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/tasklog"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/queue"
)

// run is one leased task held by this worker: running, winding down after
// preemption, or reserved and waiting for a slot.
type run struct {
	t       *store.Task
	ctx     context.Context
	cancel  context.CancelCauseFunc
	cp      *ckpt.Handle
	span    trace.Span
	log     *zap.Logger
	started time.Time

	// Guarded by Runtime.mu.
	holdsSlot bool        // counted in its slot pool's busy
	slot      int         // the pool whose slot it holds (or waits for)
	running   bool        // handed to the pool
	ending    bool        // the handler returned; its outcome is being recorded
	givingWay *preemption // set when the run was told to give way (preempted, paused, reclaimed)
	early     bool        // succeeded; its slot freed while its ack rides on the next lease (ack.go)

	lastCheckpoint atomic.Int64 // unix nanos of the last save, 0 if none
	tookSlotOf     *store.Task  // the victim, set before start when this run preempted one
	victimSpan     trace.SpanContext
	graceTimer     *time.Timer
	stuck          atomic.Bool
}

// preemption records why a run gives way.
type preemption struct {
	by *store.Task // the urgent task that took the slot; nil for a pause or a reclaimed slot
}

// newRun prepares the run of t: its context (cancellable with a cause,
// bounded by the task's Timeout), its checkpoint handle and its logger.
func (r *Runtime) newRun(t *store.Task) *run {
	rn := r.bareRun(t)
	r.prepare(rn)
	return rn
}

// bareRun is the part of newRun the dispatcher does for a leased task:
// what a shutdown or a lost lease needs to cancel it.
func (r *Runtime) bareRun(t *store.Task) *run {
	rn := &run{t: t}
	rn.ctx, rn.cancel = context.WithCancelCause(r.runsCtx)
	return rn
}

// prepare gives rn its logger and checkpoint handle, in the goroutine that
// will run it.
func (r *Runtime) prepare(rn *run) {
	t := rn.t
	rn.log = r.obs.taskLogger(t)
	rn.cp = ckpt.New(r.eng, mirror.TaskInfo(&t.Info), t.Token,
		ckpt.WithMaxBytes(r.q.Config().MaxCheckpointBytes),
		ckpt.WithResults(mirror.Results{Store: r.eng}, r.q.Config().MaxResultBytes),
		ckpt.WithOnResult(func(size int) { r.obs.resultStored(rn, size) }),
		ckpt.WithSaveTimeout(r.cfg.GracePeriod),
		ckpt.WithOnSave(func(size int, seq int64) {
			rn.lastCheckpoint.Store(time.Now().UnixNano())
			r.obs.checkpointSaved(rn, size, seq)
		}))
	rn.ctx = ckpt.NewContext(rn.ctx, rn.cp)
}

// execute runs the handler for rn in a pool goroutine and settles the task.
func (r *Runtime) execute(rn *run) {
	defer r.workers.done()
	// The handler's logger (handlers.Logger): the run's, with the attempt.
	ctx := tasklog.NewContext(rn.ctx, rn.log.WithLazy(zap.Int(telemetry.FieldAttempt, rn.t.Attempt)))
	var cancelTimeout context.CancelFunc = func() {}
	if rn.t.Timeout > 0 {
		ctx, cancelTimeout = context.WithTimeoutCause(ctx, rn.t.Timeout, ErrTaskTimeout)
	}
	err := r.h.ProcessTask(ctx, mirror.TaskInfo(&rn.t.Info)) // r.h recovers panics (handlers.Recover)
	cancelTimeout()
	r.mu.Lock()
	rn.ending = true
	r.mu.Unlock()
	r.done.settle(ctx, rn, err)
	r.finished(rn)
}

// finished releases rn's slot and wakes the dispatcher.
func (r *Runtime) finished(rn *run) {
	rn.cancel(nil)
	r.mu.Lock()
	if rn.graceTimer != nil {
		rn.graceTimer.Stop()
	}
	// The task may already run again here under a new lease (requeued,
	// then leased before this point): remove only this run.
	if r.runs[rn.t.ID] == rn {
		delete(r.runs, rn.t.ID)
	}
	r.freeSlot(rn)
	if rn.early {
		rn.early = false
		r.workers.early.Add(-1)
	}
	r.mu.Unlock()
	r.signal()
}

// freeSlot gives rn's slot back, if it holds one. Caller holds mu.
func (r *Runtime) freeSlot(rn *run) {
	if !rn.holdsSlot {
		return
	}
	r.releaseSlot(rn)
	// While a victim winds down without a slot (StartImmediately) and
	// no reserved urgent task waits for one, the slot goes back to the
	// victim: leasing new work now would run it before the victim is
	// requeued at the head of its level (invariant 5).
	if !slices.ContainsFunc(r.waiting, func(w *run) bool { return w.slot == rn.slot }) {
		for _, v := range r.runs {
			if v.givingWay != nil && !v.holdsSlot && v.slot == rn.slot {
				r.holdSlot(v)
				break
			}
		}
	}
}

// heldLeases snapshots the held runs' tasks, and the capacity to report
// to the fleet: none while draining (the heartbeater's leaseHolder).
func (r *Runtime) heldLeases() ([]*store.Task, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	leases := make([]*store.Task, 0, len(r.runs))
	for _, rn := range r.runs {
		leases = append(leases, rn.t)
	}
	if r.draining {
		return leases, 0
	}
	return leases, r.Concurrency()
}

// leaseLost cancels the run of task id with queue.ErrLeaseLost if it holds
// the lease of token (the task may have been requeued and leased here
// again since the heartbeat's snapshot). A run whose handler returned is
// not cancelled: its outcome may just have landed (an ack carried by a
// lease call), else its transition gets queue.ErrLeaseLost by itself.
func (r *Runtime) leaseLost(id, token string) {
	r.mu.Lock()
	rn := r.runs[id]
	ending := rn != nil && rn.ending
	r.mu.Unlock()
	if rn != nil && rn.t.Token == token && !ending {
		// r.log, not rn.log: the dispatcher may be setting that up.
		r.log.Error("lease lost; cancelling the task", telemetry.TaskFields(rn.t.ID, rn.t.Type, rn.t.Level)...)
		rn.cancel(queue.ErrLeaseLost)
	}
}
