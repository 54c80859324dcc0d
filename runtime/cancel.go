package runtime

import (
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
)

// Cancels reach the run of a task this worker holds by two paths: the
// wake listener's message 'x'<id>, published by the cancel itself (the
// fast path, wake.go), and the heartbeat's reply, which names the held
// leases whose cancel Redis holds (the durable path, heartbeat.go). Both
// end in the dispatcher's cancelRequested. The task's end is the
// completer's: the handler returns, its outcome is a cancel
// (outcome.ActionCancel), and the transition's reply says the task ended
// canceled (settle.go).

// runCanceler is what the heartbeater and the wake listener tell the runs
// of a cancel.
type runCanceler interface {
	// cancelRequested cancels the run of task id, if this worker holds
	// one, with the cause handlers.ErrCanceled.
	cancelRequested(id string)
}

// cancelRequested cancels the run of task id with handlers.ErrCanceled:
// a running handler sees its context done and has the grace period to
// return, past which it is treated as a stuck preempted run
// (cancelGraceExpired); a run reserved or leased but not started yet
// starts with its context done. A run whose handler returned is left
// alone: its outcome is being recorded, and the script that records it
// reads the cancel. A second request for one run changes nothing (the
// first cause stays).
func (d *dispatcher) cancelRequested(id string) {
	s := d.slots
	s.mu.Lock()
	rn := s.runs[id]
	if rn == nil || rn.ending || (rn.graceTimer != nil && rn.givingWay == nil) {
		// (A grace timer without a preemption is this cancel's: the
		// heartbeat names the task again until its handler returns.)
		s.mu.Unlock()
		return
	}
	if rn.running && rn.givingWay == nil {
		// slots.remove stops it; a preempted run has its own already.
		rn.graceTimer = time.AfterFunc(d.cfg.GracePeriod, func() { d.cancelGraceExpired(rn) })
	}
	s.mu.Unlock()
	// s.log, not rn.log: the dispatcher may be setting that up.
	s.log.Debug("cancel requested; cancelling the task", telemetry.TaskFields(rn.t.ID, rn.t.Type, rn.t.Level)...)
	rn.cancel(handlers.ErrCanceled)
}

// cancelGraceExpired is Runtime.graceExpired for a canceled run still
// running past its grace period: it keeps (takes back) its slot and its
// lease, counted (RunStats.Stuck) and logged.
func (d *dispatcher) cancelGraceExpired(rn *run) {
	if !d.slots.keepStuck(rn) {
		return
	}
	rn.stuck.Store(true)
	d.preemptor.counted.stuck.Add(1)
	rn.log.Warn("handler ignored cancellation past its grace period; it keeps its slot",
		zap.Duration("grace", d.cfg.GracePeriod))
}

// cancelRequested passes a cancel the heartbeat read to the dispatcher.
func (h heldSlots) cancelRequested(id string) { h.d.cancelRequested(id) }
