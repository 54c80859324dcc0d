package runtime

import (
	"cmp"
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// maxLeasesInFlight bounds the lease calls in flight at once: while one
// is in Redis or on its way back, slots freed meanwhile are asked for by a
// second, so Redis has the next call at hand instead of idling while the
// worker starts a batch (a drain of no-op tasks is otherwise bound by the
// round trip, with Redis and the worker each half idle).
const maxLeasesInFlight = 2

// leaseOutcome is what the lease calls that ended since the dispatcher
// last looked left it: the first error, the earliest next due time, and
// whether one succeeded (which alone resets the dispatcher's backoff).
type leaseOutcome struct {
	err  error
	next time.Time
	ok   bool
}

// leaseFree asks, in a lease call of its own, for tasks for the free slots
// of every pool (frees, by pool), unless maxLeasesInFlight calls are in
// flight, or one is and either fewer slots are free than secondLeaseAt or
// the last call that ended found the queue drained (with no backlog a
// second call would mostly find nothing, and cost Redis a call). Those
// slots count busy (pending) until the call returns and its tasks are
// launched; the call signals the dispatcher when it ends. It reports
// whether it sent a call.
func (r *Runtime) leaseFree(frees []int) bool {
	// Never lease more than the pool can start at once: handlers that
	// ignored cancellation still hold pool workers.
	frees = append([]int(nil), frees...)
	r.mu.Lock()
	inFlight, pending, backlog := r.leasing, 0, r.backlog
	for _, pl := range r.pools {
		pending += pl.pending
	}
	r.mu.Unlock()
	room, free := r.poolRoom()-pending, 0
	for p := range frees {
		frees[p] = max(min(frees[p], room-free), 0)
		free += frees[p]
	}
	if free <= 0 || inFlight >= maxLeasesInFlight || (inFlight > 0 && (!backlog || free < r.secondLeaseAt())) {
		return false
	}
	req := store.LeaseRequest{Worker: r.cfg.WorkerID, Count: free, Skip: r.pausedLevels()}
	if len(r.pools) > 1 {
		req.Groups = r.leaseGroups(frees)
	}
	r.mu.Lock()
	for p, f := range frees {
		r.pools[p].pending += f
	}
	r.leasing++
	r.mu.Unlock()
	r.callers.call(func() {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
		res, err := r.eng.Lease(ctx, req)
		cancel()
		// A stale failure (another call succeeded since this one was sent)
		// leaves no error to back off for: the dispatcher asks again.
		stale := r.redis.called(err, sent)
		var tasks []*store.Task
		if err == nil {
			r.killMalformed(res)
			r.logCorrupt(res)
			tasks = res.Tasks
		}
		r.launch(tasks, frees, func(o *leaseOutcome) {
			r.leasing--
			if err != nil {
				if !stale {
					o.err = cmp.Or(o.err, err)
				}
				return
			}
			o.ok = true
			if !res.NextDue.IsZero() && (o.next.IsZero() || res.NextDue.Before(o.next)) {
				o.next = res.NextDue
			}
			r.backlog = len(res.Tasks)+len(res.Malformed) == free
		})
		if stale {
			r.lookNow()
		}
		r.inbox.leaseEnded()
	})
	return true
}

// secondLeaseAt is how many slots must be free for a lease call beside
// one in flight: half of the slots, so that calls stay large. Every lease
// call costs Redis about 56 µs whatever its size (docs/benchmarks.md); at
// a quarter, a drain at Concurrency 16 leased 5 tasks a call, at half 7,
// for 20% less Redis CPU per task and no less throughput.
func (r *Runtime) secondLeaseAt() int { return max(r.Concurrency()/2, 1) }

// takeLeaseOutcome returns and clears what ended lease calls left, how
// many are still in flight, and whether the last one to end left a
// backlog.
func (r *Runtime) takeLeaseOutcome() (o leaseOutcome, leasing int, backlog bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, r.leaseOut = r.leaseOut, leaseOutcome{}
	return o, r.leasing, r.backlog
}

// launch starts leased tasks. The dispatcher only registers each run with
// its slot (in one lock, so the next lease counts those slots busy) and
// submits it; the pool goroutine that runs it prepares it (logger,
// checkpoint handle, span) and marks it running, so the dispatcher leases
// again while the batch starts. Until then a run is no victim and no pause
// or reclaim sweep sees it; a shutdown cancels it like any other, and a
// pause that came meanwhile is applied as it starts (startLeased).
//
// The slots the call asked for (asked, by pool) stop counting pending in
// the same lock as its runs take theirs, and ended records the call's
// outcome there too, so the dispatcher never sees those slots free twice.
func (r *Runtime) launch(tasks []*store.Task, asked []int, ended func(*leaseOutcome)) {
	frees := append([]int(nil), asked...)
	runs := make([]*run, len(tasks))
	for i, t := range tasks {
		runs[i] = r.bareRun(t)
		runs[i].slot = r.slotFor(t.Level, frees)
	}
	r.mu.Lock()
	for p, f := range asked {
		r.pools[p].pending -= f
	}
	for _, rn := range runs {
		r.runs[rn.t.ID] = rn
		r.holdSlot(rn)
	}
	ended(&r.leaseOut)
	r.mu.Unlock()
	for _, rn := range runs {
		if err := r.workers.submit(func() { r.startLeased(rn) }); err != nil {
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
	paused := rn.givingWay == nil && r.paused.mode(rn.t.Level) == queue.PausePreempt
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
func (r *Runtime) leaseGroups(frees []int) []store.LeaseGroup {
	var gs []store.LeaseGroup
	lendable := 0
	for p, f := range frees {
		if f > 0 {
			gs = append(gs, store.LeaseGroup{Levels: r.pools[p].levels, Count: f, Pool: p + 1})
			lendable += f
		}
	}
	for p, pl := range r.pools {
		if pl.borrow && lendable > frees[p] {
			gs = append(gs, store.LeaseGroup{Levels: pl.levels, Spare: true})
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

// carryAck queues rn's ack for the next lease call and frees rn's slot,
// when it can: rn holds a slot and gives way to nothing, the dispatcher
// runs, lease calls carry acks (no Config.Retention), and fewer early acks
// wait than the runtime has slots (each waits in a pool goroutine).
func (r *Runtime) carryAck(rn *run) (wait func(context.Context) error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !rn.holdsSlot || rn.givingWay != nil || r.dispatchCtx.Err() != nil || int(r.workers.early.Load()) >= r.maxEarly() {
		return nil, false
	}
	// Queued before the slot is seen free: a lease call that counts the
	// slot carries the ack.
	if wait, ok = r.eng.CarryAck(rn.t); !ok {
		return nil, false
	}
	r.freeSlot(rn)
	rn.early = true
	r.workers.early.Add(1)
	r.signal()
	return wait, true
}

// maxEarly bounds the runs whose slot was freed before their ack landed:
// the slots configured now, at most Config.earlyMax. Caller holds mu.
func (r *Runtime) maxEarly() int {
	n := 0
	for p := range r.pools {
		n += r.sizeOf(p)
	}
	return min(n, r.cfg.earlyMax())
}

// retake makes rn hold its slot again, its carried ack having failed
// (the completer's ackSlots).
func (r *Runtime) retake(rn *run) {
	r.mu.Lock()
	if !rn.holdsSlot {
		r.holdSlot(rn)
	}
	r.mu.Unlock()
}
