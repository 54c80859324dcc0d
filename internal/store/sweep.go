package store

import (
	"sync/atomic"
	"time"
)

// sweepEvery is how often, at most, this client's lease calls promote due
// scheduled tasks, recover expired leases and age (heartbeats do too).
// Between sweeps a lease call skips those reads; a known due time (a
// scheduled task, an expiring lease) brings the next sweep forward, so an
// idle worker that sleeps until NextDue starts a delayed task on time.
const sweepEvery = 100 * time.Millisecond

// sweeper decides whether a lease call sweeps.
type sweeper struct {
	next atomic.Int64 // unix ms from which the next lease call sweeps
}

// due reports "1" when a lease call at now should sweep, and if so moves
// the next sweep sweepEvery later.
func (s *sweeper) due(now time.Time) string {
	n := now.UnixMilli()
	cur := s.next.Load()
	if n < cur || !s.next.CompareAndSwap(cur, n+sweepEvery.Milliseconds()) {
		return "0"
	}
	return "1"
}

// at brings the next sweep forward to t, when earlier.
func (s *sweeper) at(t time.Time) {
	ms := t.UnixMilli()
	for {
		cur := s.next.Load()
		if ms >= cur || s.next.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// pending reports whether a lease call at now would sweep, without
// moving the next sweep (due does).
func (s *sweeper) pending(now time.Time) bool { return now.UnixMilli() >= s.next.Load() }
