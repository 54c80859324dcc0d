package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"github.com/overtake/overtake/handlers"

	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// announcedIn returns the highest level of pool p's band announced since
// the dispatcher last looked (woken, mask: see inbox.raise), or -1.
func (r *Runtime) announcedIn(p int, woken int64, mask uint64) int {
	band := r.pools[p].levels
	for i := len(band) - 1; i >= 0; i-- {
		l := band[i]
		if (l < 64 && mask&(1<<l) != 0) || int64(l) == woken {
			return l
		}
	}
	if woken >= 64 && len(r.pools) == 1 {
		return int(woken)
	}
	return -1
}

// notLeasable returns the levels a reservation for pool p must not take:
// paused levels and the other pools' bands.
func (r *Runtime) notLeasable(p int) []int {
	skip := r.pausedLevels()
	if len(r.pools) == 1 {
		return skip
	}
	for l := range r.poolOf {
		if r.poolOf[l] != p {
			skip = append(skip, l)
		}
	}
	return skip
}

// slotOf returns the pool whose slot the run of task id holds, or def.
func (r *Runtime) slotOf(id string, def int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rn := r.runs[id]; rn != nil {
		return rn.slot
	}
	return def
}

// reclaim gets pool p its slots back from other pools' tasks that borrowed
// them while p was idle, when p's own work waits (Pool.Reclaim): with
// ReclaimPreempt, as many borrowed tasks as p has pending tasks are
// preempted (checkpoint, requeue at the head of their level); their slots
// then go to p's work, since a lease fills a pool's own slots first. With
// ReclaimWait nothing is done: the slots return as the borrowed tasks end.
// It reports whether a task was preempted. Costs one round trip (the
// depths of p's levels) and only while p is saturated with borrowed tasks
// in its slots and work was announced or the slow poll ran.
func (r *Runtime) reclaim(p int, announced int, polled bool) bool {
	pl := r.pools[p]
	if len(r.pools) == 1 || pl.reclaim != ReclaimPreempt || (announced < 0 && !polled) {
		return false
	}
	r.mu.Lock()
	var borrowed []*run
	giving := 0 // borrowed tasks already giving p's slots back
	for _, rn := range r.runs {
		if rn.slot != p || !rn.holdsSlot || r.bandOf(rn.t.Level) == p {
			continue
		}
		if rn.givingWay != nil {
			giving++
		} else if rn.running && !rn.ending {
			borrowed = append(borrowed, rn)
		}
	}
	r.mu.Unlock()
	if len(borrowed) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
	defer cancel()
	depths, err := r.q.Depths(ctx)
	if err != nil {
		r.log.Warn("could not read the depths to reclaim a pool's slots", zap.String("pool", pl.name), zap.Error(err))
		return false
	}
	var pending int64
	for _, l := range pl.levels {
		if !r.isPaused(l) {
			pending += depths[l]
		}
	}
	n := min(int(pending)-giving, len(borrowed))
	if n <= 0 {
		return false
	}
	// The lowest, then latest started, borrowed tasks give way first.
	slices.SortFunc(borrowed, func(a, b *run) int {
		if a.t.Level != b.t.Level {
			return a.t.Level - b.t.Level
		}
		return b.started.Compare(a.started)
	})
	cause := fmt.Errorf("%w: pool %q takes back the slot its task borrowed", handlers.ErrPreempted, pl.name)
	taken := 0
	for _, v := range borrowed[:n] {
		r.mu.Lock()
		ok := r.runs[v.t.ID] == v && v.givingWay == nil && !v.ending
		if ok {
			v.givingWay = &preemption{}
		}
		r.mu.Unlock()
		if !ok {
			continue
		}
		taken++
		r.outcomes.count(v.t.Level, func(c *store.LevelCounts) { c.Preempted++ })
		r.preemptor.counted.preempted.Add(1)
		v.log.Info("preempting a task in a borrowed slot: its pool's work arrived", zap.String("slot_pool", pl.name))
		v.cancel(cause)
	}
	return taken > 0
}
