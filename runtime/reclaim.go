package runtime

import (
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"

	"github.com/overtake/overtake/handlers"

	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// reclaim gets pool p its slots back from other pools' tasks that borrowed
// them while p was idle, when p's own work waits (Pool.Reclaim): with
// ReclaimPreempt, as many borrowed tasks as p has pending tasks are
// preempted (checkpoint, requeue at the head of their level); their slots
// then go to p's work, since a lease fills a pool's own slots first. With
// ReclaimWait nothing is done: the slots return as the borrowed tasks end.
// It reports whether a task was preempted. Costs one round trip (the
// depths of p's levels) and only while p is saturated with borrowed tasks
// in its slots and work was announced or the slow poll ran.
func (d *dispatcher) reclaim(p int, announced int, polled bool) bool {
	pl := d.slots.pools[p]
	if len(d.slots.pools) == 1 || pl.reclaim != ReclaimPreempt || (announced < 0 && !polled) {
		return false
	}
	// giving: borrowed tasks already giving p's slots back
	borrowed, giving := d.slots.borrowedIn(p)
	if len(borrowed) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	depths, err := d.q.Depths(ctx)
	if err != nil {
		d.log.Warn("could not read the depths to reclaim a pool's slots", zap.String("pool", pl.name), zap.Error(err))
		return false
	}
	var pending int64
	for _, l := range pl.levels {
		if d.paused.mode(l) == queue.NotPaused {
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
		if !d.slots.giveWayIf(v) {
			continue
		}
		taken++
		d.outcomes.count(v.t.Level, func(c *store.LevelCounts) { c.Preempted++ })
		d.preemptor.counted.preempted.Add(1)
		v.log.Info("preempting a task in a borrowed slot: its pool's work arrived", zap.String("slot_pool", pl.name))
		v.cancel(cause)
	}
	return taken > 0
}
