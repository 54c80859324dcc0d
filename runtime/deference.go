package runtime

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// Bounded deference (preempt.Policy.FleetDeferral). A saturated worker whose
// reservation the fleet refuses (another live worker has a free slot, or
// runs a lower eligible victim) defers: that worker should take the urgent
// task, or give way first. But a worker that was killed keeps looking alive
// until its record expires, and a draining worker, one with preemption
// disabled or one whose urgent task waits for its own victim will never
// take it. So the deference is bounded: once the urgent work that was
// pending when the fleet first refused is still pending FleetDeferral later,
// the worker reserves regardless of the fleet (store.ReserveRequest's
// IgnoreFleet) and preempts its own victim.
//
// The bound is kept per episode, not per refusal: the fleet may refuse many
// announcements in a row while it takes each urgent task promptly. At the
// bound the worker therefore checks (one Stats call) whether a task that
// was already pending when the episode began is still waiting; if the fleet
// took those and only newer ones wait, a new episode starts from now rather
// than preempting for a task the fleet is about to take. Both times compared
// are Redis's (ready times of list heads), so clock skew between workers
// changes nothing. A task that arrives during an episode thus waits at most
// two bounds.

// fleetDeferral is the episode a saturated worker is in. Dispatcher
// goroutine only.
type fleetDeferral struct {
	// since is when the fleet first refused, by this process's clock;
	// zero when not deferring.
	since time.Time
	// mark is the newest ready time (Redis's clock) among the heads of the
	// levels worth preempting for, when the episode began: a head that
	// became ready no later was pending then.
	mark time.Time
}

// endDeferral ends the deferral episode, if any: a reservation succeeded,
// nothing was pending, or the worker is not saturated any more.
func (pr *preemptor) endDeferral() { pr.deferral = fleetDeferral{} }

// deferralDue is called before a reservation for victims at minLevel and
// above. ignore: the bound has passed and work pending since the episode
// began still waits, so reserve regardless of the fleet. idle: nothing
// worth preempting for is pending (the episode ends; do not reserve).
func (pr *preemptor) deferralDue(ctx context.Context, p, minLevel int, now time.Time) (ignore, idle bool, err error) {
	d := &pr.deferral
	bound := pr.policy.FleetDeferral
	if d.since.IsZero() || bound < 0 || now.Sub(d.since) < bound {
		return false, false, nil
	}
	oldest, newest, pending, err := pr.pendingHeads(ctx, p, minLevel)
	switch {
	case err != nil:
		return false, false, err
	case !pending:
		pr.endDeferral()
		return false, true, nil
	case !oldest.After(d.mark):
		return true, false, nil
	}
	// The fleet took what was pending when the episode began; what waits
	// now came since. Defer to the fleet afresh, from now.
	pr.log.Debug("the fleet took the urgent work it was deferred to; deferring afresh",
		zap.Duration("bound", bound))
	*d = fleetDeferral{since: now, mark: newest}
	return false, false, nil
}

// deferToFleet records a refused reservation (the fleet could take the
// urgent task) and returns when the dispatcher should look again: when the
// bound expires, or never with DeferForever. A refusal while nothing worth
// preempting for is pending (on a slow poll, or the fleet already took the
// task) starts no episode.
func (pr *preemptor) deferToFleet(ctx context.Context, p, minLevel int, now time.Time, why error) (retryAt time.Time, err error) {
	d := &pr.deferral
	bound := pr.policy.FleetDeferral
	pr.counted.deferred.Add(1)
	if d.since.IsZero() {
		if bound >= 0 {
			_, newest, pending, err := pr.pendingHeads(ctx, p, minLevel)
			if err != nil {
				return time.Time{}, err
			}
			if !pending {
				return time.Time{}, nil
			}
			d.mark = newest
		}
		d.since = now
	}
	pr.log.Debug("no preemption yet: deferring to the fleet", zap.String("why", why.Error()),
		zap.Duration("deferred", now.Sub(d.since)), zap.Duration("bound", bound))
	if bound < 0 {
		return time.Time{}, nil
	}
	return d.since.Add(bound), nil
}

// pendingHeads reads, in one round trip, whether tasks wait at minLevel or
// above in levels of pool p that may preempt, and the oldest and newest ready times
// among the heads of those levels (Redis's clock).
func (pr *preemptor) pendingHeads(ctx context.Context, p, minLevel int) (oldest, newest time.Time, pending bool, err error) {
	st, err := pr.q.Stats(ctx)
	if err != nil {
		return time.Time{}, time.Time{}, false, err
	}
	for _, l := range st.Levels {
		if l.Level < minLevel || l.Pending == 0 || l.Paused != queue.NotPaused || pr.bandOf(l.Level) != p ||
			slices.Contains(pr.policy.NeverPreempt, l.Level) {
			continue
		}
		at := l.OldestReadyAt
		if !pending || at.Before(oldest) {
			oldest = at
		}
		if !pending || at.After(newest) {
			newest = at
		}
		pending = true
	}
	return oldest, newest, pending, nil
}
