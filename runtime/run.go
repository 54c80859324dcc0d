package runtime

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
)

// run is one leased task held by this worker: running, winding down after
// preemption, or reserved and waiting for a slot.
type run struct {
	t       *store.Task
	ctx     context.Context
	rctx    runContext // rn.ctx's base once prepared: the Handle and logger (runctx.go)
	cancel  context.CancelCauseFunc
	cp      ckpt.Handle // made by prepare
	obs     *observer   // told of the Handle's saves (CheckpointSaved)
	span    trace.Span
	log     runLog // built on its first kept line (runlog.go)
	started time.Time

	// Guarded by slots.mu.
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
	rn.ctx, rn.cancel = context.WithCancelCause(r.life.runs)
	return rn
}

// prepare gives rn its logger, its checkpoint handle and the run context
// that carries both to the handler (runContext), in the goroutine that
// will run it.
func (r *Runtime) prepare(rn *run) {
	t := rn.t
	r.obs.taskLogger(rn)
	rn.obs = r.obs
	rn.cp.Init(r.eng, mirror.TaskInfo(&t.Info), t.Token,
		ckpt.WithMaxBytes(r.q.Config().MaxCheckpointBytes),
		ckpt.WithResults(mirror.Results{Store: r.eng}, r.q.Config().MaxResultBytes),
		ckpt.WithObserver(rn),
		ckpt.WithSaveTimeout(r.cfg.GracePeriod))
	rn.rctx = runContext{Context: rn.ctx, rn: rn}
	rn.ctx = &rn.rctx
}

// start registers rn as held and submits it to the pool. takeSlot says
// whether it occupies a slot now (the dispatcher's runner).
func (r *Runtime) start(rn *run, takeSlot bool) {
	// The span and logger are set before the run is visible to the
	// heartbeat, which may read them.
	r.obs.leased(rn)
	if r.slots.add(rn, takeSlot) {
		rn.cancel(handlers.ErrCanceled) // its cancel came before it was registered
	}
	if err := r.workers.submit(func() { r.execute(rn) }); err != nil {
		// The pool is closed only after every task returned, so this means
		// a bug; the lease expires and recovery runs the task elsewhere.
		rn.log.Error("pool refused task", zap.Error(err))
		r.finished(rn)
	}
}

// startLeased prepares a run registered by a lease call (dispatcher.launch)
// and runs it, in its pool goroutine (the dispatcher's runner).
func (r *Runtime) startLeased(rn *run) {
	r.prepare(rn)
	r.obs.leased(rn)
	if r.slots.begin(rn, r.dispatch.paused.mode(rn.t.Level)) {
		r.dispatch.preemptPaused(rn)
	}
	r.execute(rn)
}

// execute runs the handler for rn in a pool goroutine and settles the task.
func (r *Runtime) execute(rn *run) {
	defer r.workers.done()
	// rn.ctx carries the handler's logger (handlers.Logger): the run's,
	// with the attempt (runContext).
	ctx := rn.ctx
	var cancelTimeout context.CancelFunc = func() {}
	if rn.t.Timeout > 0 {
		ctx, cancelTimeout = context.WithTimeoutCause(ctx, rn.t.Timeout, ErrTaskTimeout)
	}
	err := r.h.ProcessTask(ctx, mirror.TaskInfo(&rn.t.Info)) // r.h recovers panics (handlers.Recover)
	cancelTimeout()
	r.slots.ending(rn)
	r.done.settle(ctx, rn, err)
	r.finished(rn)
}

// finished releases rn's slot and wakes the dispatcher.
func (r *Runtime) finished(rn *run) {
	rn.cancel(nil)
	if r.slots.remove(rn) {
		r.workers.early.Add(-1)
	}
	r.dispatch.signal()
}

// CheckpointSaved records a save of rn's checkpoint (ckpt.Observer): its
// time, for the heartbeat, and its trace event, metric and log line.
func (rn *run) CheckpointSaved(size int, seq int64) {
	rn.lastCheckpoint.Store(time.Now().UnixNano())
	rn.obs.checkpointSaved(rn, size, seq)
}

// ResultStored records that rn's handler stored its task's result
// (ckpt.Observer).
func (rn *run) ResultStored(size int) { rn.obs.resultStored(rn, size) }
