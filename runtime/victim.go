package runtime

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/victim"
)

// canPreempt reports whether this runtime preempts at all.
func (r *Runtime) canPreempt() bool { return !r.cfg.Preemption.Disabled }

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

// tryPreempt follows the protocol: choose a local victim, RESERVE an urgent
// task above its level (the script refuses while any live worker in the
// fleet has a free slot or runs a lower eligible victim, for a bounded time:
// see deference.go), and only if a task was leased cancel the victim. So
// preemptions never exceed urgent tasks taken. announced is the highest
// level announced since the last look, or -1 on a poll.
//
// retryAt says when the dispatcher should look again rather than at its
// next slow poll: when the first victim that lacks only the policy's
// MinRunTime becomes eligible, or when the fleet deferral's bound expires.
func (r *Runtime) tryPreempt(p, announced int) (preempted bool, retryAt time.Time, err error) {
	pol := victim.Policy{Policy: r.cfg.Preemption}
	band := r.pools[p].levels
	arriving := band[len(band)-1]
	if announced >= 0 {
		arriving = announced
	}
	if r.poolRoom() <= 0 {
		// Victims that ignore cancellation hold every pool worker: an
		// urgent task could not start, so take none.
		r.endDeferral()
		return false, time.Time{}, nil
	}
	now := time.Now()
	cands := r.candidates(p)
	vic, ok := pol.Choose(cands, arriving, now)
	if !ok {
		r.endDeferral()
		return false, r.firstEligible(cands, arriving, now), nil
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
	defer cancel()
	minLevel := vic.Level + pol.MinLevelGap
	ignore, idle, err := r.deferralDue(ctx, p, minLevel, now)
	if err != nil || idle {
		return false, time.Time{}, err
	}
	slot := r.slotOf(vic.ID, p)
	t, res, err := r.eng.Reserve(ctx, store.ReserveRequest{
		Worker: r.cfg.WorkerID, VictimID: vic.ID, VictimLevel: vic.Level,
		MinLevel: minLevel, MinRunTime: pol.MinRunTime,
		MaxPreemptions: pol.MaxPreemptions, NeverPreempted: pol.NeverPreempted, NeverPreempt: pol.NeverPreempt,
		IgnoreFleet: ignore, Skip: r.notLeasable(p), Pool: r.poolNumber(slot),
	})
	if res != nil {
		r.killMalformed(res)
		if len(res.Malformed) > 0 && errors.Is(err, store.ErrNoTask) {
			r.rejoinRun(vic.ID) // the reservation took only a malformed record
		}
	}
	switch {
	case errors.Is(err, store.ErrFreeSlotInFleet), errors.Is(err, store.ErrLowerVictimElsewhere):
		retryAt, err = r.deferToFleet(ctx, p, minLevel, now, err)
		return false, retryAt, err
	case errors.Is(err, store.ErrNoTask):
		r.endDeferral()
		return false, time.Time{}, nil
	case err != nil:
		return false, time.Time{}, err
	}
	if ignore {
		r.stats.overrides.Add(1)
		r.log.Info("preempting after deferring to the fleet for the bound",
			zap.Duration("bound", pol.FleetDeferral), zap.Duration("deferred", now.Sub(r.deferral.since)))
	}
	r.endDeferral()
	r.stats.reserved.Add(1)
	urgent := r.newRun(t)
	urgent.slot = slot
	r.preempt(vic.ID, urgent)
	return true, time.Time{}, nil
}

// firstEligible returns when the first candidate below arriving that only
// lacks MinRunTime becomes eligible, or zero.
func (r *Runtime) firstEligible(cands []victim.Candidate, arriving int, now time.Time) time.Time {
	pol := victim.Policy{Policy: r.cfg.Preemption}
	if pol.MinRunTime <= 0 {
		return time.Time{}
	}
	var first time.Time
	for _, c := range cands {
		at := c.StartedAt.Add(pol.MinRunTime)
		if !at.After(now) || !pol.Preempts(arriving, c.Level) {
			continue
		}
		c.StartedAt = c.StartedAt.Add(-pol.MinRunTime) // as if it had run long enough
		if pol.Eligible(c, now) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
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
	// urgent.slot is the victim's pool (tryPreempt): it takes a slot there.
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

	r.stats.preempted.Add(1)
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
	r.stats.stuck.Add(1)
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
