package runtime

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/victim"
)

// The giving way of a victim in the slots, once the preemptor (victim.go)
// reserved an urgent task for it: the preemptor's victimSlots.

// poolRoom is how many more handlers the pool can start without blocking
// (workers.room).
func (r *Runtime) poolRoom() int { return r.workers.room() }

// candidates returns the running tasks that could give way to urgent work
// of pool p (slots.candidates).
func (r *Runtime) candidates(p int) []victim.Candidate { return r.slots.candidates(p) }

// slotOf returns the pool whose slot the run of task id holds, or def.
func (r *Runtime) slotOf(id string, def int) int { return r.slots.slotOf(id, def) }

// notLeasable returns the levels a reservation for pool p must not take:
// paused levels and the other pools' bands.
func (r *Runtime) notLeasable(p int) []int { return r.slots.notLeasable(p, r.dispatch.paused.levels()) }

// killMalformed dead-letters the records a reservation could not decode
// (dispatcher.killMalformed).
func (r *Runtime) killMalformed(res *store.LeaseResult) { r.dispatch.killMalformed(res) }

// giveWay makes a run of t, the urgent task reserved for the slot of
// pool slot, and preempts the victim for it.
func (r *Runtime) giveWay(victimID string, t *store.Task, slot int) {
	urgent := r.newRun(t)
	urgent.slot = slot
	r.preempt(victimID, urgent)
}

// preempt cancels the victim for urgent, which this worker has leased, and
// starts urgent now (StartImmediately) or once a slot frees
// (StartAfterVictim).
func (r *Runtime) preempt(victimID string, urgent *run) {
	immediate := r.cfg.UrgentStart == StartImmediately
	v, startNow, stay := r.slots.handOver(victimID, urgent, immediate, func(v *run) *time.Timer {
		return time.AfterFunc(r.cfg.GracePeriod, func() { r.graceExpired(v) })
	})
	if v == nil {
		if stay != nil {
			defer r.rejoin(stay)
		}
		if startNow {
			r.start(urgent, true)
		} else {
			r.dispatch.signal()
		}
		return
	}
	cause := &handlers.PreemptedError{ByID: urgent.t.ID, ByLevel: urgent.t.Level}
	r.preemptor.counted.preempted.Add(1)
	r.outcomes.count(v.t.Level, func(c *store.LevelCounts) { c.Preempted++ })
	r.obs.preempted(v, urgent, r.cfg.GracePeriod)
	v.cancel(cause)
	if startNow {
		r.start(urgent, true)
	}
}

// graceExpired handles a victim still running after its grace period: Go
// cannot stop a goroutine, so it keeps (takes back) its slot and its lease;
// it is counted and logged, and never runs twice at once because its lease
// is still held and extended.
func (r *Runtime) graceExpired(v *run) {
	if !r.slots.keepStuck(v) {
		return
	}
	v.stuck.Store(true)
	// Logged before it is counted: whoever sees RunStats.Stuck move finds
	// the line.
	v.log.Warn("handler ignored cancellation past its grace period; it keeps its slot",
		zap.Duration("grace", r.cfg.GracePeriod))
	r.preemptor.counted.stuck.Add(1)
}

// startedAt returns when the run started, or now if it has not yet.
func (rn *run) startedAt() time.Time {
	if rn.started.IsZero() {
		return time.Now()
	}
	return rn.started
}

// rejoinRun rejoins the run of task id, if this worker still runs it.
func (r *Runtime) rejoinRun(id string) {
	if v := r.slots.lookup(id); v != nil {
		r.rejoin(v.t)
	}
}

// rejoin puts t back in the fleet's running set (the engine's Rejoin), in
// the background: while Redis cannot be reached or the queue's cluster
// slot migrates (which refuses every script until it ends) it tries again,
// after the outage ends or on backoff, for as long as this worker runs t.
// Out of the set, t is out of every other worker's choice of a victim.
func (r *Runtime) rejoin(t *store.Task) {
	r.life.rejoins.Add(1) // the dispatcher calls it: teardown waits for it first
	go func() {
		defer r.life.rejoins.Done()
		bo := backoff{limit: r.cfg.MaxRedisBackoff}
		logged := false
		for {
			ctx, cancel := context.WithTimeout(r.life.base, 5*time.Second)
			sent := time.Now()
			err := r.eng.Rejoin(ctx, t)
			cancel()
			stale := r.redis.called(err, sent)
			if err == nil || r.life.base.Err() != nil || !r.slots.holds(t) {
				if err == nil && logged {
					r.log.Info("task back in the fleet's running set", zap.String("task_id", t.ID))
				}
				return
			}
			if !isOutage(err) && !store.SlotMoving(err) {
				r.log.Warn("could not return a task to the fleet's running set", zap.String("task_id", t.ID), zap.Error(err))
				return
			}
			if !logged {
				logged = true
				r.log.Warn("could not return a task to the fleet's running set yet; retrying",
					zap.String("task_id", t.ID), zap.Error(err))
			}
			wait := bo.next()
			if stale {
				wait = 0
			}
			if !r.redis.awaitProbe(r.dispatch.stopped, time.Now().Add(r.q.Config().LeaseDuration)) {
				select {
				case <-r.life.base.Done():
					return
				case <-time.After(wait):
				}
			}
		}
	}()
}
