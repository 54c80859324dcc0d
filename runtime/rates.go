package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"sync"
)

// outcomeCounts accumulates this worker's outcomes per level (and per pool,
// with Config.Pools) between two heartbeats, which add them to the fleet's
// rates in Redis (see queue.RateWindow): rates cost no Redis command per
// task.
type outcomeCounts struct {
	mu     sync.Mutex
	levels map[int]store.LevelCounts
	pools  map[string]store.LevelCounts
}

// count applies f to the counts of level l and of its pool.
func (r *Runtime) count(l int, f func(*store.LevelCounts)) {
	o := &r.outcomes
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.levels == nil {
		o.levels, o.pools = map[int]store.LevelCounts{}, map[string]store.LevelCounts{}
	}
	c := o.levels[l]
	f(&c)
	o.levels[l] = c
	if len(r.pools) > 1 {
		name := r.pools[r.bandOf(l)].name
		pc := o.pools[name]
		f(&pc)
		o.pools[name] = pc
	}
}

// takeCounts returns the counts since the last take and starts afresh.
func (r *Runtime) takeCounts() (levels map[int]store.LevelCounts, pools map[string]store.LevelCounts) {
	o := &r.outcomes
	o.mu.Lock()
	defer o.mu.Unlock()
	levels, pools = o.levels, o.pools
	o.levels, o.pools = nil, nil
	return levels, pools
}

// restoreCounts adds back counts a failed heartbeat could not deliver.
func (r *Runtime) restoreCounts(levels map[int]store.LevelCounts, pools map[string]store.LevelCounts) {
	o := &r.outcomes
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.levels == nil {
		o.levels, o.pools = map[int]store.LevelCounts{}, map[string]store.LevelCounts{}
	}
	for l, c := range levels {
		o.levels[l] = addCounts(o.levels[l], c)
	}
	for n, c := range pools {
		o.pools[n] = addCounts(o.pools[n], c)
	}
}

func addCounts(a, b store.LevelCounts) store.LevelCounts {
	return store.LevelCounts{Processed: a.Processed + b.Processed, Failed: a.Failed + b.Failed,
		Preempted: a.Preempted + b.Preempted, SLABreaches: a.SLABreaches + b.SLABreaches}
}
