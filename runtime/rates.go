package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"sync"
)

// outcomeCounts accumulates this worker's outcomes per level (and per pool,
// with Config.Pools) between two heartbeats, which add them to the fleet's
// rates in Redis (see queue.RateWindow): rates cost no Redis command per
// task. Runs count into it as they end; the heartbeater takes the counts.
type outcomeCounts struct {
	// poolOf names each level's pool; nil with one pool, whose counts
	// are the levels'.
	poolOf []string
	first  string // the first pool's name, for a level out of range
	mu     sync.Mutex
	levels map[int]store.LevelCounts
	pools  map[string]store.LevelCounts
	// scratch holds the counts count's f changes: a local would escape
	// to the heap, an allocation per count.
	scratch store.LevelCounts
}

// newOutcomeCounts returns the counts of a runtime with pools.
func newOutcomeCounts(pools []*slotPool, poolOf []int) *outcomeCounts {
	o := &outcomeCounts{}
	if len(pools) > 1 {
		o.poolOf = make([]string, len(poolOf))
		for l, p := range poolOf {
			o.poolOf[l] = pools[p].name
		}
		o.first = pools[0].name
	}
	return o
}

// count applies f to the counts of level l and of its pool.
func (o *outcomeCounts) count(l int, f func(*store.LevelCounts)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.levels == nil {
		o.levels, o.pools = map[int]store.LevelCounts{}, map[string]store.LevelCounts{}
	}
	o.scratch = o.levels[l]
	f(&o.scratch)
	o.levels[l] = o.scratch
	if o.poolOf != nil {
		name := o.first
		if l >= 0 && l < len(o.poolOf) {
			name = o.poolOf[l]
		}
		o.scratch = o.pools[name]
		f(&o.scratch)
		o.pools[name] = o.scratch
	}
}

// take returns the counts since the last take and starts afresh.
func (o *outcomeCounts) take() (levels map[int]store.LevelCounts, pools map[string]store.LevelCounts) {
	o.mu.Lock()
	defer o.mu.Unlock()
	levels, pools = o.levels, o.pools
	o.levels, o.pools = nil, nil
	return levels, pools
}

// restore adds back counts a failed heartbeat could not deliver.
func (o *outcomeCounts) restore(levels map[int]store.LevelCounts, pools map[string]store.LevelCounts) {
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
