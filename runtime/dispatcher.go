package runtime

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// dispatcher fills the slots: its loop (dispatch.go) leases as many tasks
// as there are free slots in one round trip (lease.go, on the lease
// callers of leaser.go), probes Redis in their place while it is down
// (outage.go), reclaims borrowed slots (reclaim.go) and, when a pool is
// saturated and urgent work was announced, has the preemptor reserve it.
// It owns its inbox (what wakes it), the lease calls in flight and what
// they left, the paused levels it skips, and its one start and stop. It
// is the wake listener's waker, the autoscaler's poolSizer and the
// completer's ackSlots; it starts runs through runner.
type dispatcher struct {
	cfg       Config
	eng       *store.Store
	q         *queue.Client
	log       *zap.Logger
	slots     *slots
	workers   *workers
	redis     *redisWatch
	preemptor *preemptor
	done      *completer // counts and dead-letters what a lease call set aside
	outcomes  *outcomeCounts
	runs      runner
	halt      func(error) // stops the runtime: the queue's shape is not this worker's

	inbox   inbox         // what wakes the loop (inbox.go)
	callers *leaseCallers // run the lease calls and the probe (leaser.go)
	paused  pausedSet     // paused levels, see pause.go
	book    leaseBook     // the lease calls in flight and what the ended ones left (lease.go)

	ctx       context.Context // the runtime's base context: the calls' parent
	stopLease chan struct{}   // closed when leasing stops
	// stopped ends once the loop stopped (after it sent the acks queued
	// for its lease calls).
	stopped     context.Context
	endDispatch context.CancelFunc
	wg          sync.WaitGroup
}

// runner is what the dispatcher needs of the runs' lifecycle (run.go).
type runner interface {
	// bareRun makes the run of a leased task: what a shutdown or a lost
	// lease needs to cancel it.
	bareRun(t *store.Task) *run
	// start registers rn and submits it to the pool; takeSlot says whether
	// it occupies a slot now.
	start(rn *run, takeSlot bool)
	// startLeased prepares and runs a run registered by a lease call, in
	// its pool goroutine.
	startLeased(rn *run)
	// finished releases rn (the pool refused it).
	finished(rn *run)
}

// newDispatcher returns a dispatcher with its inbox and callers; the
// caller sets the fields it shares with the other services.
func newDispatcher(d *dispatcher) *dispatcher {
	d.stopLease = make(chan struct{})
	d.callers = newLeaseCallers(d.stopLease)
	d.inbox.init()
	d.stopped, d.endDispatch = context.WithCancel(context.Background())
	return d
}

// start runs the loop, with ctx the parent of its Redis calls.
func (d *dispatcher) start(ctx context.Context) {
	d.ctx = ctx
	d.wg.Add(1)
	go d.dispatch()
}

// stopLeasing stops the loop: no lease call is sent from now on.
func (d *dispatcher) stopLeasing() { close(d.stopLease) }

// leasingStopped is closed once leasing stops.
func (d *dispatcher) leasingStopped() <-chan struct{} { return d.stopLease }

// wait waits for the loop to return, until ctx ends; false then.
func (d *dispatcher) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// signal wakes the dispatcher without blocking.
func (d *dispatcher) signal() { d.inbox.signal() }

// lookNow makes the dispatcher look for work at once, as on its slow poll.
func (d *dispatcher) lookNow() { d.inbox.lookNow() }

// resize resizes the pools (slots.resize): the autoscaler's poolSizer.
func (d *dispatcher) resize(next func(p, size, used int) int) bool { return d.slots.resize(next) }

// announced records a wake-up: a task of level l became pending (isLevel
// false: the message named no level). A paused level's is not worth a
// look; the dispatcher is woken either way (the wake listener's waker).
func (d *dispatcher) announced(l int, isLevel bool) {
	if isLevel && d.paused.mode(l) == queue.NotPaused {
		d.inbox.raise(int64(l))
	}
	d.inbox.signal()
}

// carryAck queues rn's ack for the next lease call and frees rn's slot,
// when it can: rn holds a slot and gives way to nothing, the dispatcher
// runs, lease calls carry acks (no Config.Retention), and there is room
// for one more early ack (earlyRoom): the completer's ackSlots.
func (d *dispatcher) carryAck(rn *run) (wait func(context.Context) error, ok bool) {
	ok = d.slots.carry(rn, func(slots int) bool {
		if !d.earlyRoom(slots) {
			return false
		}
		// Queued before the slot is seen free: a lease call that counts
		// the slot carries the ack.
		var queued bool
		if wait, queued = d.eng.CarryAck(rn.t); queued {
			d.workers.early.Add(1)
		}
		return queued
	})
	if !ok {
		return nil, false
	}
	d.signal()
	return wait, true
}

// earlyRoom reports whether one more run may wait for its carried ack
// (each waits in a pool goroutine) on a runtime of slots slots: fewer wait
// than twice its slots. Once a lease call that carried acks lands, the
// runs it answered still count until their goroutines wake, while the
// tasks it leased may already have finished and carried theirs; on
// several shards an ack waits for a lease call to its own shard. With a
// bound of the slots alone, that refused 3–6% of a no-op drain's acks,
// which went alone (finish.lua): 0.0047 calls a task at Concurrency 64 on
// one shard, 0.0093 on 3 (overtake-bench --only shards); with twice the
// slots, 0.00004 and 0.0006–0.0014.
func (d *dispatcher) earlyRoom(slots int) bool {
	return int(d.workers.early.Load()) < min(2*slots, d.cfg.earlyMax())
}

// retake makes rn hold its slot again, its carried ack having failed
// (the completer's ackSlots).
func (d *dispatcher) retake(rn *run) { d.slots.retake(rn) }
