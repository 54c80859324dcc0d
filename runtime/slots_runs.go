package runtime

import (
	"slices"
	"time"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// How runs enter, move through and leave the slots: each step is one
// critical section of the slots' lock.

// add registers rn as held and running; takeSlot says whether it occupies
// a slot now.
func (s *slots) add(rn *run, takeSlot bool) (canceled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	canceled = s.takeEarly(rn.t.ID)
	s.runs[rn.t.ID] = rn
	rn.holdsSlot = false
	rn.running = true
	rn.started = time.Now()
	if takeSlot {
		s.holdSlot(rn)
	}
	return canceled
}

// claim counts frees (by pool) as asked for by a lease call in flight.
func (s *slots) claim(frees []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, f := range frees {
		s.pools[p].pending += f
	}
}

// claimed returns the slots asked for by lease calls in flight.
func (s *slots) claimed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.pools {
		n += p.pending
	}
	return n
}

// addLeased registers the runs of a lease call that asked for asked (by
// pool), each holding its slot (run.slot), in the lock in which those
// slots stop counting as asked for: no slot is seen free twice. It
// returns the runs whose cancel came while the call was in flight.
func (s *slots) addLeased(runs []*run, asked []int) (canceled []*run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, f := range asked {
		s.pools[p].pending -= f
	}
	for _, rn := range runs {
		if s.takeEarly(rn.t.ID) {
			canceled = append(canceled, rn)
		}
		s.runs[rn.t.ID] = rn
		s.holdSlot(rn)
	}
	return canceled
}

// nextWaiting takes the oldest reserved urgent run whose pool has a free
// slot out of the slots (the caller starts it with add), or nil.
func (s *slots) nextWaiting() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.waiting, func(rn *run) bool { return s.pools[rn.slot].busy < s.sizeOf(rn.slot) })
	if i < 0 {
		return nil
	}
	rn := s.waiting[i]
	s.waiting = slices.Delete(s.waiting, i, i+1)
	delete(s.runs, rn.t.ID)
	return rn
}

// begin marks a leased run running, as its pool goroutine starts it. It
// reports whether the run must give way at once: its level was paused
// with PausePreempt (mode) meanwhile, and nothing else told it to.
func (s *slots) begin(rn *run, mode queue.PauseMode) (paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn.running = true
	rn.started = time.Now()
	paused = rn.givingWay == nil && mode == queue.PausePreempt
	if paused {
		rn.givingWay = &preemption{}
	}
	return paused
}

// ending marks rn's handler returned: its outcome is being recorded.
func (s *slots) ending(rn *run) {
	s.mu.Lock()
	rn.ending = true
	s.mu.Unlock()
}

// remove takes rn out of the slots and frees its slot. It reports whether
// rn's slot had been freed early (its ack carried by a lease call).
func (s *slots) remove(rn *run) (early bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rn.graceTimer != nil {
		rn.graceTimer.Stop()
	}
	// The task may already run again here under a new lease (requeued,
	// then leased before this point): remove only this run.
	if s.runs[rn.t.ID] == rn {
		delete(s.runs, rn.t.ID)
	}
	s.freeSlot(rn)
	early, rn.early = rn.early, false
	return early
}

// carry frees rn's slot before its ack lands, when rn holds a slot, gives
// way to nothing, the dispatcher still runs (see stopCarrying), and
// queue, called under the lock with the slots configured now, accepts.
func (s *slots) carry(rn *run, queue func(slots int) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !rn.holdsSlot || rn.givingWay != nil || s.noCarry {
		return false
	}
	n := 0
	for p := range s.pools {
		n += s.sizeOf(p)
	}
	if !queue(n) {
		return false
	}
	s.freeSlot(rn)
	rn.early = true
	return true
}

// stopCarrying makes carry refuse from now on: no lease call will carry
// an ack again.
func (s *slots) stopCarrying() {
	s.mu.Lock()
	s.noCarry = true
	s.mu.Unlock()
}

// retake makes rn hold its slot again, its carried ack having failed.
func (s *slots) retake(rn *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !rn.holdsSlot {
		s.holdSlot(rn)
	}
}

// giveWayIf marks v giving way if it is still held, running its handler,
// and told nothing else; it reports whether it did.
func (s *slots) giveWayIf(v *run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.runs[v.t.ID] == v && v.givingWay == nil && !v.ending
	if ok {
		v.givingWay = &preemption{}
	}
	return ok
}

// pausedVictims marks the running tasks of level l giving way (their
// level was paused with PausePreempt) and returns them, oldest first.
func (s *slots) pausedVictims(l int) []*run {
	s.mu.Lock()
	var victims []*run
	for _, rn := range s.runs {
		if rn.running && !rn.ending && rn.givingWay == nil && rn.t.Level == l {
			rn.givingWay = &preemption{}
			victims = append(victims, rn)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(victims, func(a, b *run) int { return a.started.Compare(b.started) })
	return victims
}

// borrowedIn returns other pools' running tasks that hold a slot of pool
// p, and how many more of them already give it back.
func (s *slots) borrowedIn(p int) (borrowed []*run, giving int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rn := range s.runs {
		if rn.slot != p || !rn.holdsSlot || s.bandOf(rn.t.Level) == p {
			continue
		}
		if rn.givingWay != nil {
			giving++
		} else if rn.running && !rn.ending {
			borrowed = append(borrowed, rn)
		}
	}
	return borrowed, giving
}

// keepStuck makes v, a victim still running past its grace period, hold a
// slot again; false when v returned meanwhile (nothing is stuck).
func (s *slots) keepStuck(v *run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[v.t.ID] != v || v.ending {
		// v returned (its timer fired as it finished), and the task may
		// already run again here under a new lease: nothing is stuck.
		return false
	}
	if !v.holdsSlot {
		s.holdSlot(v)
	}
	return true
}

// drain makes the slots report no capacity to the fleet, and the
// autoscaler stop, from now on.
func (s *slots) drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
}

// takeWaiting removes the reserved urgent runs that never started.
func (s *slots) takeWaiting() []*run {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := s.waiting
	s.waiting = nil
	for _, rn := range waiting {
		delete(s.runs, rn.t.ID)
	}
	return waiting
}

// unfinished returns the held tasks whose handler still runs (stuck) and
// those whose outcome is being written.
func (s *slots) unfinished() (stuck, writing []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rn := range s.runs {
		if rn.ending {
			writing = append(writing, rn.t.ID)
		} else {
			stuck = append(stuck, rn.t.ID)
		}
	}
	return stuck, writing
}

// handOver gives urgent, reserved for a slot of pool urgent.slot, the slot
// of the victim victimID: it marks the victim giving way and returns it,
// with urgent either holding the victim's slot now (immediate: the victim
// winds down without one, and the caller starts urgent) or waiting for
// it; timer, called under the lock, starts the victim's grace period.
// Nothing is preempted (v nil) when the victim is gone, already gives way,
// holds no slot, or a slot of the pool is free or about to be (a run
// ending): the victim may have returned while the reservation was in
// flight (Redis then already counted a free slot here, but the fleet check
// skips the caller's own record). urgent then starts now (startNow: the
// caller starts it) or waits for the first slot to free, and a victim
// still held is returned as stay, to rejoin the fleet's running set.
func (s *slots) handOver(victimID string, urgent *run, immediate bool,
	timer func(v *run) *time.Timer) (v *run, startNow bool, stay *store.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v = s.runs[victimID]
	ending := 0
	for _, rn := range s.runs {
		if rn.ending && rn.holdsSlot && rn.slot == urgent.slot {
			ending++
		}
	}
	free := s.freeIn(urgent.slot)
	if v == nil || v.givingWay != nil || !v.holdsSlot || free+ending > 0 {
		if v != nil && v.givingWay == nil {
			stay = v.t // not preempted after all: back in the fleet's view
		}
		if free > 0 {
			return nil, true, stay
		}
		s.runs[urgent.t.ID] = urgent
		s.waiting = append(s.waiting, urgent)
		return nil, false, stay
	}
	v.givingWay = &preemption{by: urgent.t}
	urgent.tookSlotOf = v.t
	if v.span != nil {
		urgent.victimSpan = v.span.SpanContext()
	}
	if immediate {
		s.releaseSlot(v) // the slot passes to urgent; v winds down
	} else {
		s.runs[urgent.t.ID] = urgent
		s.waiting = append(s.waiting, urgent)
	}
	v.graceTimer = timer(v)
	return v, immediate, nil
}
