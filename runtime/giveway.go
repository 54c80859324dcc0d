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

// candidates returns the running tasks that could give way to urgent work
// of pool p: those in p's slots, and p's tasks running in slots they
// borrowed from other pools. Another pool's task that borrowed one of p's
// slots is no candidate when p waits for its slots (ReclaimWait): reclaim
// declines to preempt it, and so does ordinary preemption.
func (r *Runtime) candidates(p int) []victim.Candidate {
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := r.pools[p].reclaim == ReclaimWait
	out := make([]victim.Candidate, 0, len(r.runs))
	for _, rn := range r.runs {
		if !rn.running || rn.givingWay != nil || !rn.holdsSlot || (rn.slot != p && r.bandOf(rn.t.Level) != p) {
			continue
		}
		if wait && rn.slot == p && r.bandOf(rn.t.Level) != p {
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
	r.mu.Lock()
	v := r.runs[victimID]
	// A run that held a slot may have returned while the reservation was in
	// flight: Redis then already counted this worker as having a free slot,
	// but the fleet check skips the caller's own record. Then, or if the
	// victim itself finished meanwhile, nothing is preempted: urgent takes
	// a free slot now, or waits for the first one to free.
	// urgent.slot is the victim's pool (preemptor.try): it takes a slot there.
	ending := 0
	for _, rn := range r.runs {
		if rn.ending && rn.holdsSlot && rn.slot == urgent.slot {
			ending++
		}
	}
	free := r.freeIn(urgent.slot)
	if v == nil || v.givingWay != nil || !v.holdsSlot || free+ending > 0 {
		if v != nil && v.givingWay == nil {
			defer r.rejoin(v.t) // not preempted after all: back in the fleet's view
		}
		if free > 0 {
			r.mu.Unlock()
			r.start(urgent, true)
			return
		}
		r.runs[urgent.t.ID] = urgent
		r.waiting = append(r.waiting, urgent)
		r.mu.Unlock()
		r.signal()
		return
	}
	cause := &handlers.PreemptedError{ByID: urgent.t.ID, ByLevel: urgent.t.Level}
	v.givingWay = &preemption{by: urgent.t}
	urgent.tookSlotOf = v.t
	if v.span != nil {
		urgent.victimSpan = v.span.SpanContext()
	}
	immediate := r.cfg.UrgentStart == StartImmediately
	if immediate {
		r.releaseSlot(v) // the slot passes to urgent; v winds down
	} else {
		r.runs[urgent.t.ID] = urgent
		r.waiting = append(r.waiting, urgent)
	}
	v.graceTimer = time.AfterFunc(r.cfg.GracePeriod, func() { r.graceExpired(v) })
	r.mu.Unlock()

	r.preemptor.counted.preempted.Add(1)
	r.outcomes.count(v.t.Level, func(c *store.LevelCounts) { c.Preempted++ })
	r.obs.preempted(v, urgent, r.cfg.GracePeriod)
	v.cancel(cause)
	if immediate {
		r.start(urgent, true)
	}
}

// graceExpired handles a victim still running after its grace period: Go
// cannot stop a goroutine, so it keeps (takes back) its slot and its lease;
// it is counted and logged, and never runs twice at once because its lease
// is still held and extended.
func (r *Runtime) graceExpired(v *run) {
	r.mu.Lock()
	if r.runs[v.t.ID] != v || v.ending {
		// (An ending victim returned; its outcome is being recorded.)
		// v returned (its timer fired as it finished), and the task may
		// already run again here under a new lease: nothing is stuck.
		r.mu.Unlock()
		return
	}
	if !v.holdsSlot {
		r.holdSlot(v)
	}
	r.mu.Unlock()
	v.stuck.Store(true)
	r.preemptor.counted.stuck.Add(1)
	v.log.Warn("handler ignored cancellation past its grace period; it keeps its slot",
		zap.Duration("grace", r.cfg.GracePeriod))
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
	r.mu.Lock()
	v := r.runs[id]
	r.mu.Unlock()
	if v != nil {
		r.rejoin(v.t)
	}
}

// rejoin puts t back in the fleet's running set (the engine's Rejoin), in
// the background: while Redis cannot be reached or the queue's cluster
// slot migrates (which refuses every script until it ends) it tries again,
// after the outage ends or on backoff, for as long as this worker runs t.
// Out of the set, t is out of every other worker's choice of a victim.
func (r *Runtime) rejoin(t *store.Task) {
	r.loops.Add(1) // the dispatcher, a loop, calls it: never at zero
	go func() {
		defer r.loops.Done()
		bo := backoff{limit: r.cfg.MaxRedisBackoff}
		logged := false
		for {
			ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
			sent := time.Now()
			err := r.eng.Rejoin(ctx, t)
			cancel()
			stale := r.redis.called(err, sent)
			if err == nil || r.baseCtx.Err() != nil || !r.holds(t) {
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
			if !r.redis.awaitProbe(r.dispatchCtx, time.Now().Add(r.q.Config().LeaseDuration)) {
				select {
				case <-r.baseCtx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
	}()
}

// holds reports whether this worker still runs t's lease.
func (r *Runtime) holds(t *store.Task) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn := r.runs[t.ID]
	return rn != nil && rn.t.Token == t.Token && !rn.ending
}
