package runtime

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/engine"
	"github.com/overtake/overtake/queue"
)

// leaseFree leases tasks for the free slots of every pool (frees, by pool)
// in one round trip and starts them. more reports that every slot asked
// for was filled, so more tasks may be waiting.
func (r *Runtime) leaseFree(frees []int) (more bool, next time.Time, err error) {
	// Never lease more than the pool can start at once: handlers that
	// ignored cancellation still hold pool workers.
	frees = append([]int(nil), frees...)
	room, free := r.poolRoom(), 0
	for p := range frees {
		frees[p] = max(min(frees[p], room-free), 0)
		free += frees[p]
	}
	if free <= 0 {
		return false, time.Time{}, nil
	}
	req := engine.LeaseRequest{Worker: r.cfg.WorkerID, Count: free, Skip: r.pausedLevels()}
	if len(r.pools) > 1 {
		req.Groups = r.leaseGroups(frees)
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
	defer cancel()
	res, err := r.eng.Lease(ctx, req)
	if err != nil {
		return false, time.Time{}, err
	}
	r.killMalformed(res)
	r.logCorrupt(res)
	r.launch(res.Tasks, frees)
	n := len(res.Tasks) + len(res.Malformed)
	return n > 0 && n == free, res.NextDue, nil
}

// launch starts leased tasks. The dispatcher only registers each run with
// its slot (in one lock, so the next lease counts those slots busy) and
// submits it; the pool goroutine that runs it prepares it (logger,
// checkpoint handle, span) and marks it running, so the dispatcher leases
// again while the batch starts. Until then a run is no victim and no pause
// or reclaim sweep sees it; a shutdown cancels it like any other, and a
// pause that came meanwhile is applied as it starts (startLeased).
func (r *Runtime) launch(tasks []*queue.Task, frees []int) {
	runs := make([]*run, len(tasks))
	for i, t := range tasks {
		runs[i] = r.bareRun(t)
		runs[i].slot = r.slotFor(t.Level, frees)
	}
	r.mu.Lock()
	for _, rn := range runs {
		r.runs[rn.t.ID] = rn
		r.holdSlot(rn)
	}
	r.mu.Unlock()
	for _, rn := range runs {
		r.tasks.Add(1)
		r.handlers.Add(1)
		if err := r.pool.Submit(func() { r.startLeased(rn) }); err != nil {
			r.handlers.Add(-1)
			r.tasks.Done()
			// The pool is closed only after every task returned, so this
			// means a bug; the lease expires and recovery runs the task
			// elsewhere.
			r.log.Error("pool refused task", zap.String("task_id", rn.t.ID), zap.Error(err))
			r.finished(rn)
		}
	}
}

// startLeased prepares a run registered by launch and runs it, in its pool
// goroutine.
func (r *Runtime) startLeased(rn *run) {
	r.prepare(rn)
	r.obs.leased(rn)
	r.mu.Lock()
	rn.running = true
	rn.started = time.Now()
	paused := rn.givingWay == nil && r.pauseMode(rn.t.Level) == queue.PausePreempt
	if paused {
		rn.givingWay = &preemption{}
	}
	r.mu.Unlock()
	if paused {
		r.preemptPaused(rn)
	}
	r.execute(rn)
}

// leaseGroups asks, for each pool with free slots, for tasks of its band,
// then, for each pool that may borrow, for tasks of its band in the slots
// the others leave idle.
func (r *Runtime) leaseGroups(frees []int) []engine.LeaseGroup {
	var gs []engine.LeaseGroup
	lendable := 0
	for p, f := range frees {
		if f > 0 {
			gs = append(gs, engine.LeaseGroup{Levels: r.pools[p].levels, Count: f, Pool: p + 1})
			lendable += f
		}
	}
	for p, pl := range r.pools {
		if pl.borrow && lendable > frees[p] {
			gs = append(gs, engine.LeaseGroup{Levels: pl.levels, Spare: true})
		}
	}
	return gs
}

// slotFor picks the slot of a task leased at level: its own pool's while
// it has one free (the lease script fills own slots first), else a free
// slot of another pool, borrowed. frees is updated.
func (r *Runtime) slotFor(level int, frees []int) int {
	p := r.bandOf(level)
	if frees[p] > 0 {
		frees[p]--
		return p
	}
	for q, f := range frees {
		if f > 0 {
			frees[q]--
			return q
		}
	}
	return p // (not reached: the lease took no more than the free slots)
}
