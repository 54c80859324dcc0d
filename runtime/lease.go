package runtime

import (
	"cmp"
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/redis/go-redis/v9"
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

// leaseBook counts the dispatcher's lease calls in flight (its probe
// included) and keeps what the ended ones left it.
type leaseBook struct {
	mu      sync.Mutex
	leasing int
	backlog bool // the last lease call that ended filled every slot it asked for
	out     leaseOutcome
}

// take returns and clears what ended lease calls left, how many are still
// in flight, and whether the last one to end left a backlog.
func (b *leaseBook) take() (o leaseOutcome, leasing int, backlog bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, b.out = b.out, leaseOutcome{}
	return o, b.leasing, b.backlog
}

// state returns how many calls are in flight and whether the last one to
// end left a backlog.
func (b *leaseBook) state() (leasing int, backlog bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leasing, b.backlog
}

// sent counts a call sent.
func (b *leaseBook) sent() {
	b.mu.Lock()
	b.leasing++
	b.mu.Unlock()
}

// ended counts a call ended and records what it left (fn, under the
// book's lock).
func (b *leaseBook) ended(fn func(o *leaseOutcome, backlog *bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leasing--
	fn(&b.out, &b.backlog)
}

// leaseFree asks, in a lease call of its own, for tasks for the free slots
// of every pool (frees, by pool), unless maxLeasesInFlight calls are in
// flight, or one is and either fewer slots are free than secondLeaseAt or
// the last call that ended found the queue drained (with no backlog a
// second call would mostly find nothing, and cost Redis a call). Those
// slots count busy (pending) until the call returns and its tasks are
// launched; the call signals the dispatcher when it ends. It reports
// whether it sent a call.
func (d *dispatcher) leaseFree(frees []int) bool {
	// Never lease more than the pool can start at once: handlers that
	// ignored cancellation still hold pool workers.
	frees = append([]int(nil), frees...)
	inFlight, backlog := d.book.state()
	room, free := d.workers.room()-d.slots.claimed(), 0
	for p := range frees {
		frees[p] = max(min(frees[p], room-free), 0)
		free += frees[p]
	}
	if free <= 0 || inFlight >= maxLeasesInFlight || (inFlight > 0 && (!backlog || free < d.secondLeaseAt())) {
		return false
	}
	req := store.LeaseRequest{Worker: d.cfg.WorkerID, Count: free, Skip: d.paused.levels()}
	if len(d.slots.pools) > 1 {
		req.Groups = d.leaseGroups(frees)
	}
	d.slots.claim(frees)
	d.book.sent()
	d.callers.call(func() {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		res, err := d.eng.Lease(ctx, req)
		cancel()
		// A stale failure (another call succeeded since this one was sent)
		// leaves no error to back off for: the dispatcher asks again.
		stale := d.redis.called(err, sent)
		var tasks []*store.Task
		if err == nil {
			d.killMalformed(res)
			d.logCorrupt(res)
			tasks = res.Tasks
		}
		d.launch(tasks, frees)
		d.book.ended(func(o *leaseOutcome, backlog *bool) {
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
			*backlog = len(res.Tasks)+len(res.Malformed) == free
		})
		if stale {
			d.lookNow()
		}
		d.inbox.leaseEnded()
	})
	return true
}

// secondLeaseAt is how many slots must be free for a lease call beside
// one in flight: half of the slots, so that calls stay large. Every lease
// call costs Redis about 56 µs whatever its size (docs/benchmarks.md); at
// a quarter, a drain at Concurrency 16 leased 5 tasks a call, at half 7,
// for 20% less Redis CPU per task and no less throughput.
func (d *dispatcher) secondLeaseAt() int { return max(d.slots.concurrency()/2, 1) }

// launch starts leased tasks. The dispatcher only registers each run with
// its slot (in one lock, so the next lease counts those slots busy) and
// submits it; the pool goroutine that runs it prepares it (logger,
// checkpoint handle, span) and marks it running, so the dispatcher leases
// again while the batch starts. Until then a run is no victim and no pause
// or reclaim sweep sees it; a shutdown cancels it like any other, and a
// pause that came meanwhile is applied as it starts (startLeased).
//
// The slots the call asked for (asked, by pool) stop counting pending in
// the same lock as its runs take theirs (slots.addLeased), so the
// dispatcher never sees those slots free twice; the call counts as ended
// (leaseBook) only after.
func (d *dispatcher) launch(tasks []*store.Task, asked []int) {
	frees := append([]int(nil), asked...)
	runs := make([]*run, len(tasks))
	for i, t := range tasks {
		runs[i] = d.runs.bareRun(t)
		runs[i].slot = d.slotFor(t.Level, frees)
	}
	for _, rn := range d.slots.addLeased(runs, asked) {
		rn.cancel(handlers.ErrCanceled) // its cancel came while the call was in flight
	}
	for _, rn := range runs {
		if err := d.workers.submit(func() { d.runs.startLeased(rn) }); err != nil {
			// The pool is closed only after every task returned, so this
			// means a bug; the lease expires and recovery runs the task
			// elsewhere.
			d.log.Error("pool refused task", zap.String("task_id", rn.t.ID), zap.Error(err))
			d.runs.finished(rn)
		}
	}
}

// leaseGroups asks, for each pool with free slots, for tasks of its band,
// then, for each pool that may borrow, for tasks of its band in the slots
// the others leave idle.
func (d *dispatcher) leaseGroups(frees []int) []store.LeaseGroup {
	var gs []store.LeaseGroup
	lendable := 0
	for p, f := range frees {
		if f > 0 {
			gs = append(gs, store.LeaseGroup{Levels: d.slots.pools[p].levels, Count: f, Pool: p + 1})
			lendable += f
		}
	}
	for p, pl := range d.slots.pools {
		if pl.borrow && lendable > frees[p] {
			gs = append(gs, store.LeaseGroup{Levels: pl.levels, Spare: true})
		}
	}
	return gs
}

// slotFor picks the slot of a task leased at level: its own pool's while
// it has one free (the lease script fills own slots first), else a free
// slot of another pool, borrowed. frees is updated.
func (d *dispatcher) slotFor(level int, frees []int) int {
	p := d.slots.bandOf(level)
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

// probe tries Redis in place of a lease call while an outage lasts, with
// one connection attempt (reach), where a lease call makes go-redis's
// MaxRetries+1 tries of up to Options.DialerRetries dials each (go-redis
// dials a pool's connections in goroutines of its own, which retry
// whatever the caller's context). Once Redis answers on that connection,
// a PING through the pool, which go-redis does not retry, makes sure the
// client's own connections work. It counts as a lease call in flight,
// and leaves its error, or the end of the outage, for the dispatcher the
// same way.
func (d *dispatcher) probe() {
	d.book.sent()
	d.callers.once(func() {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		err := reach(ctx, d.eng.Redis())
		if err == nil {
			err = d.eng.Redis().Process(ctx, onceCmd{redis.NewStatusCmd(ctx, "ping")})
		}
		cancel()
		stale := d.redis.called(err, sent)
		d.book.ended(func(o *leaseOutcome, _ *bool) {
			if err != nil && !stale && o.err == nil {
				o.err = err
			}
		})
		if stale {
			d.lookNow() // Redis answered another call meanwhile
		}
		d.inbox.leaseEnded()
	})
}
