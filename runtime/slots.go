package runtime

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/victim"
	"github.com/overtake/overtake/queue"
)

// slots is the worker's registry of what it holds: every task it holds a
// lease on (its run), the reserved urgent runs waiting for a slot, the
// pools of slots by band with what each has held, lent and claimed for
// lease calls in flight, and whether the worker drains. One lock guards
// them, so that a slot is never seen free twice; everything else reaches
// them through the methods here. It is the heartbeater's leaseHolder.
//
// A run's slot fields (holdsSlot, slot, running, ending, givingWay, early)
// are guarded by mu too.
type slots struct {
	log *zap.Logger

	mu       sync.Mutex
	runs     map[string]*run // every task this worker holds a lease on
	waiting  []*run          // reserved urgent tasks waiting for a slot
	pools    []*slotPool     // the slots by pool (pools.go); one without Config.Pools
	poolOf   []int           // the pool of each level; never changes
	draining bool            // shutting down: report no capacity to the fleet
	noCarry  bool            // the dispatcher stopped: no slot is freed before its ack
	// early are the cancels that came for a task before its run was
	// registered (cancel.go), by when they came.
	early map[string]time.Time
	// capacity is the current concurrency: Config.Concurrency, or the
	// autoscaler's choice (the pools' total).
	capacity atomic.Int64
}

// newSlots returns the slots of a runtime of cfg on a queue of levels.
func newSlots(cfg Config, levels int, log *zap.Logger) *slots {
	s := &slots{log: log, runs: make(map[string]*run)}
	s.pools, s.poolOf = newPools(cfg, levels)
	s.capacity.Store(int64(cfg.Concurrency))
	return s
}

// concurrency is the slots configured now, all pools together.
func (s *slots) concurrency() int { return int(s.capacity.Load()) }

// sizeOf returns pool p's size. Caller holds mu (autoscaling moves it).
func (s *slots) sizeOf(p int) int { return s.pools[p].size }

// bandOf returns the pool a task at level l belongs to.
func (s *slots) bandOf(l int) int {
	if l < 0 || l >= len(s.poolOf) {
		return 0
	}
	return s.poolOf[l]
}

// freeIn returns pool p's free slots. Caller holds mu.
func (s *slots) freeIn(p int) int {
	waiting := 0
	for _, rn := range s.waiting {
		if rn.slot == p {
			waiting++
		}
	}
	return s.sizeOf(p) - s.pools[p].busy - s.pools[p].pending - waiting
}

// frees returns every pool's free slots (negative as zero).
func (s *slots) frees() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.pools))
	for p := range s.pools {
		out[p] = max(s.freeIn(p), 0)
	}
	return out
}

// holdSlot makes rn hold a slot of its pool (rn.slot). Caller holds mu.
func (s *slots) holdSlot(rn *run) {
	rn.holdsSlot = true
	s.pools[rn.slot].busy++
}

// releaseSlot gives rn's slot back. Caller holds mu.
func (s *slots) releaseSlot(rn *run) {
	rn.holdsSlot = false
	s.pools[rn.slot].busy--
}

// freeSlot gives rn's slot back, if it holds one. Caller holds mu.
func (s *slots) freeSlot(rn *run) {
	if !rn.holdsSlot {
		return
	}
	s.releaseSlot(rn)
	// While a victim winds down without a slot (StartImmediately) and
	// no reserved urgent task waits for one, the slot goes back to the
	// victim: leasing new work now would run it before the victim is
	// requeued at the head of its level (invariant 5).
	if !slices.ContainsFunc(s.waiting, func(w *run) bool { return w.slot == rn.slot }) {
		for _, v := range s.runs {
			if v.givingWay != nil && !v.holdsSlot && v.slot == rn.slot {
				s.holdSlot(v)
				break
			}
		}
	}
}

// poolLayout describes the pools for the heartbeat (nil without Pools).
func (s *slots) poolLayout() []store.PoolLayout {
	if len(s.pools) == 1 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.PoolLayout, len(s.pools))
	for i, p := range s.pools {
		out[i] = store.PoolLayout{Pool: i + 1, Name: p.name, Size: p.size, Levels: p.levels, Borrow: p.borrow}
	}
	return out
}

// stats returns a snapshot of each pool (Runtime.PoolStats).
func (s *slots) stats() []PoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PoolStats, len(s.pools))
	for i, p := range s.pools {
		out[i] = PoolStats{Name: p.name, Levels: slices.Clone(p.levels), Size: s.sizeOf(i), Busy: p.busy}
	}
	for _, rn := range s.runs {
		if !rn.holdsSlot {
			continue
		}
		if band := s.bandOf(rn.t.Level); band != rn.slot {
			out[rn.slot].Lent++
			out[band].Borrowed++
		}
	}
	return out
}

// resize calls next with each pool's size and used slots (held, and
// reserved for urgent tasks waiting), sets the size it returns, and makes
// the total the runtime's concurrency, under mu, as frees, preemption and
// the waiting runs read sizes with busy; false while draining (the
// autoscaler's poolSizer, with the dispatcher's signal).
func (s *slots) resize(next func(p, size, used int) int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	total := 0
	for i, p := range s.pools {
		used := p.busy
		for _, rn := range s.waiting {
			if rn.slot == i {
				used++
			}
		}
		p.size = next(i, p.size, used)
		total += p.size
	}
	s.capacity.Store(int64(total))
	return true
}

// heldLeases snapshots the held runs' tasks, and the capacity to report
// to the fleet: none while draining (the heartbeater's leaseHolder).
func (s *slots) heldLeases() ([]*store.Task, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	leases := make([]*store.Task, 0, len(s.runs))
	for _, rn := range s.runs {
		leases = append(leases, rn.t)
	}
	if s.draining {
		return leases, 0
	}
	return leases, s.concurrency()
}

// leaseLost cancels the run of task id with queue.ErrLeaseLost if it holds
// the lease of token (the task may have been requeued and leased here
// again since the heartbeat's snapshot). A run whose handler returned is
// not cancelled: its outcome may just have landed (an ack carried by a
// lease call), else its transition gets queue.ErrLeaseLost by itself.
func (s *slots) leaseLost(id, token string) {
	s.mu.Lock()
	rn := s.runs[id]
	ending := rn != nil && rn.ending
	s.mu.Unlock()
	if rn != nil && rn.t.Token == token && !ending {
		// s.log, not rn.log: the dispatcher may be setting that up.
		s.log.Error("lease lost; cancelling the task", telemetry.TaskFields(rn.t.ID, rn.t.Type, rn.t.Level)...)
		rn.cancel(queue.ErrLeaseLost)
	}
}

// lookup returns the run of task id, or nil.
func (s *slots) lookup(id string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// slotOf returns the pool whose slot the run of task id holds, or def.
func (s *slots) slotOf(id string, def int) int {
	if rn := s.lookup(id); rn != nil {
		return rn.slot
	}
	return def
}

// holds reports whether this worker still runs t's lease.
func (s *slots) holds(t *store.Task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn := s.runs[t.ID]
	return rn != nil && rn.t.Token == t.Token && !rn.ending
}

// count returns how many runs the worker holds.
func (s *slots) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// candidates returns the running tasks that could give way to urgent work
// of pool p: those in p's slots, and p's tasks running in slots they
// borrowed from other pools. Another pool's task that borrowed one of p's
// slots is no candidate when p waits for its slots (ReclaimWait): reclaim
// declines to preempt it, and so does ordinary preemption.
func (s *slots) candidates(p int) []victim.Candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait := s.pools[p].reclaim == ReclaimWait
	out := make([]victim.Candidate, 0, len(s.runs))
	for _, rn := range s.runs {
		if !rn.running || rn.givingWay != nil || !rn.holdsSlot || (rn.slot != p && s.bandOf(rn.t.Level) != p) {
			continue
		}
		if wait && rn.slot == p && s.bandOf(rn.t.Level) != p {
			continue // borrowed from p, which lets it finish
		}
		c := victim.Candidate{ID: rn.t.ID, Level: rn.t.Level, StartedAt: rn.startedAt(),
			Preemptions: rn.t.Preemptions, Preemptible: !rn.t.NotPreemptible}
		if ns := rn.lastCheckpoint.Load(); ns > 0 {
			c.LastCheckpoint = time.Unix(0, ns)
		}
		out = append(out, c)
	}
	return out
}

// notLeasable returns the levels a reservation for pool p must not take:
// skip (the paused levels) and the other pools' bands.
func (s *slots) notLeasable(p int, skip []int) []int {
	if len(s.pools) == 1 {
		return skip
	}
	for l := range s.poolOf {
		if s.poolOf[l] != p {
			skip = append(skip, l)
		}
	}
	return skip
}

// announcedIn returns the highest level of pool p's band announced since
// the dispatcher last looked (woken, mask: see inbox.raise), or -1.
func (s *slots) announcedIn(p int, woken int64, mask uint64) int {
	band := s.pools[p].levels
	for i := len(band) - 1; i >= 0; i-- {
		l := band[i]
		if (l < 64 && mask&(1<<l) != 0) || int64(l) == woken {
			return l
		}
	}
	if woken >= 64 && len(s.pools) == 1 {
		return int(woken)
	}
	return -1
}
