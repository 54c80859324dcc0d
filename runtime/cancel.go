package runtime

import (
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
)

// Cancels reach the run of a task this worker holds by two paths: the
// wake listener's message 'x'<id>, published by the cancel itself (the
// fast path, wake.go), and the heartbeat's reply, which names the held
// leases whose cancel Redis holds (the durable path, heartbeat.go). Both
// end in cancelRequested. The task's end is the completer's: the handler
// returns, its outcome is a cancel (outcome.ActionCancel), and the
// transition's reply says the task ended canceled (settle.go).

// runCanceler is what the heartbeater and the wake listener tell the runs
// of a cancel.
type runCanceler interface {
	// cancelRequested cancels the run of task id, if this worker holds
	// one, with the cause handlers.ErrCanceled.
	cancelRequested(id string)
}

// cancelRequested cancels the run of task id with handlers.ErrCanceled:
// a running handler sees its context done and has the grace period to
// return, past which it is treated as a stuck preempted run (graceExpired:
// it keeps its slot and lease, counted and logged); a run reserved or
// leased but not started yet starts with its context done. A run whose
// handler returned is left alone: its outcome is being recorded, and the
// script that records it reads the cancel. A second request for one run
// changes nothing (the first cause stays).
func (r *Runtime) cancelRequested(id string) {
	rn := r.slots.toCancel(id, func(rn *run) *time.Timer {
		return time.AfterFunc(r.cfg.GracePeriod, func() { r.graceExpired(rn) })
	})
	if rn == nil {
		return
	}
	// r.log, not rn.log: the dispatcher may be setting that up.
	r.log.Debug("cancel requested; cancelling the task", telemetry.TaskFields(rn.t.ID, rn.t.Type, rn.t.Level)...)
	rn.cancel(handlers.ErrCanceled)
}

// toCancel returns the run of task id for a cancel, or nil when this
// worker holds none, its handler returned (its outcome is being recorded,
// and the script that records it reads the cancel), or this cancel's
// grace timer already runs (the heartbeat names the task again until its
// handler returns: a grace timer without a preemption is a cancel's). A
// running handler that gives way to nothing gets its grace period now:
// timer, called under the lock, starts it (finished stops it; a
// preempted run has its own already).
func (s *slots) toCancel(id string, timer func(rn *run) *time.Timer) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn := s.runs[id]
	if rn == nil {
		s.keepEarly(id)
		return nil
	}
	if rn.ending || (rn.graceTimer != nil && rn.givingWay == nil) {
		return nil
	}
	if rn.running && rn.givingWay == nil {
		rn.graceTimer = timer(rn)
	}
	return rn
}

// A cancel may come before its run is registered: Redis published it
// after the lease call (or the reservation) that took the task ran and
// before its reply reached this worker. It is kept for a while, and the
// run is cancelled as it is registered (slots.add, slots.addLeased), so
// the fast path does not fall back to the next heartbeat.

// earlyCancelFor bounds how long such a cancel is kept, maxEarlyCancels
// how many: a lease reply takes milliseconds; most cancels kept are for
// tasks other workers hold, and every worker hears each one.
const (
	earlyCancelFor  = 10 * time.Second
	maxEarlyCancels = 1024
)

// keepEarly keeps a cancel of task id that found no run. Caller holds mu.
func (s *slots) keepEarly(id string) {
	now := time.Now()
	if len(s.early) >= maxEarlyCancels {
		for k, at := range s.early {
			if now.Sub(at) > earlyCancelFor {
				delete(s.early, k)
			}
		}
		if len(s.early) >= maxEarlyCancels {
			return // a flood of cancels for others' tasks: the heartbeat still finds ours
		}
	}
	if s.early == nil {
		s.early = make(map[string]time.Time)
	}
	s.early[id] = now
}

// takeEarly reports whether a cancel of task id came before its run, and
// forgets it. Caller holds mu.
func (s *slots) takeEarly(id string) bool {
	at, ok := s.early[id]
	if !ok {
		return false
	}
	delete(s.early, id)
	return time.Since(at) <= earlyCancelFor
}
