package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/victim"
	"github.com/overtake/overtake/queue"
)

// preemptor decides, for a saturated pool, whether urgent work preempts a
// running task: it chooses the victim by the policy (package preempt),
// RESERVES an urgent task above it (refused while the fleet could take it:
// the bounded deference of deference.go) and has the slots give way
// (victimSlots). It runs on the dispatcher's goroutine, when the
// dispatcher finds a pool saturated, and owns the deference episode and
// the counts of preemptions.
type preemptor struct {
	eng    *store.Store
	q      *queue.Client
	log    *zap.Logger
	worker string
	policy victim.Policy
	bands  [][]int // each pool's levels, ascending
	poolOf []int   // each level's pool
	slots  victimSlots
	// deferral is the episode of bounded deference to the fleet the
	// dispatcher is in, if any (see deference.go). Dispatcher goroutine
	// only.
	deferral fleetDeferral
	counted  preemptCounts
}

// preemptCounts are the preemptor's figures in RunStats.
type preemptCounts struct {
	preempted, reserved, stuck, deferred, overrides atomic.Int64
}

// victimSlots is what the preemptor needs of the held runs and slots.
type victimSlots interface {
	// poolRoom is how many more handlers the pool can start.
	poolRoom() int
	// candidates returns the running tasks that could give way to urgent
	// work of pool p.
	candidates(p int) []victim.Candidate
	// slotOf returns the pool whose slot the run of task id holds, or def.
	slotOf(id string, def int) int
	// notLeasable returns the levels a reservation for pool p must not take.
	notLeasable(p int) []int
	// killMalformed dead-letters the records a reservation could not decode.
	killMalformed(res *store.LeaseResult)
	// rejoinRun puts the run of task id back in the fleet's running set.
	rejoinRun(id string)
	// giveWay runs t, reserved for the slot of pool slot, in the place of
	// the victim.
	giveWay(victimID string, t *store.Task, slot int)
}

// enabled reports whether this runtime preempts at all.
func (pr *preemptor) enabled() bool { return !pr.policy.Disabled }

// bandOf returns the pool a task at level l belongs to.
func (pr *preemptor) bandOf(l int) int {
	if l < 0 || l >= len(pr.poolOf) {
		return 0
	}
	return pr.poolOf[l]
}

// try follows the protocol: choose a local victim, RESERVE an urgent
// task above its level (the script refuses while any live worker in the
// fleet has a free slot or runs a lower eligible victim, for a bounded time:
// see deference.go), and only if a task was leased cancel the victim. So
// preemptions never exceed urgent tasks taken. announced is the highest
// level announced since the last look, or -1 on a poll.
//
// retryAt says when the dispatcher should look again rather than at its
// next slow poll: when the first victim that lacks only the policy's
// MinRunTime becomes eligible, or when the fleet deferral's bound expires.
func (pr *preemptor) try(ctx context.Context, p, announced int) (preempted bool, retryAt time.Time, err error) {
	pol := pr.policy
	band := pr.bands[p]
	arriving := band[len(band)-1]
	if announced >= 0 {
		arriving = announced
	}
	if pr.slots.poolRoom() <= 0 {
		// Victims that ignore cancellation hold every pool worker: an
		// urgent task could not start, so take none.
		pr.endDeferral()
		return false, time.Time{}, nil
	}
	now := time.Now()
	cands := pr.slots.candidates(p)
	vic, ok := pol.Choose(cands, arriving, now)
	if !ok {
		pr.endDeferral()
		return false, pr.firstEligible(cands, arriving, now), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	minLevel := vic.Level + pol.MinLevelGap
	ignore, idle, err := pr.deferralDue(ctx, p, minLevel, now)
	if err != nil || idle {
		return false, time.Time{}, err
	}
	slot := pr.slots.slotOf(vic.ID, p)
	t, res, err := pr.eng.Reserve(ctx, store.ReserveRequest{
		Worker: pr.worker, VictimID: vic.ID, VictimLevel: vic.Level,
		MinLevel: minLevel, MinRunTime: pol.MinRunTime,
		MaxPreemptions: pol.MaxPreemptions, NeverPreempted: pol.NeverPreempted, NeverPreempt: pol.NeverPreempt,
		IgnoreFleet: ignore, Skip: pr.slots.notLeasable(p), Pool: poolNumber(len(pr.bands), slot),
	})
	if res != nil {
		pr.slots.killMalformed(res)
		if len(res.Malformed) > 0 && errors.Is(err, store.ErrNoTask) {
			pr.slots.rejoinRun(vic.ID) // the reservation took only a malformed record
		}
	}
	switch {
	case errors.Is(err, store.ErrFreeSlotInFleet), errors.Is(err, store.ErrLowerVictimElsewhere):
		retryAt, err = pr.deferToFleet(ctx, p, minLevel, now, err)
		return false, retryAt, err
	case errors.Is(err, store.ErrNoTask):
		pr.endDeferral()
		return false, time.Time{}, nil
	case err != nil:
		return false, time.Time{}, err
	}
	if ignore {
		pr.counted.overrides.Add(1)
		pr.log.Info("preempting after deferring to the fleet for the bound",
			zap.Duration("bound", pol.FleetDeferral), zap.Duration("deferred", now.Sub(pr.deferral.since)))
	}
	pr.endDeferral()
	pr.counted.reserved.Add(1)
	pr.slots.giveWay(vic.ID, t, slot)
	return true, time.Time{}, nil
}

// firstEligible returns when the first candidate below arriving that only
// lacks MinRunTime becomes eligible, or zero.
func (pr *preemptor) firstEligible(cands []victim.Candidate, arriving int, now time.Time) time.Time {
	pol := pr.policy
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
