package runtime

import (
	"sync"

	"github.com/overtake/overtake/queue"
)

// outcomeCounts accumulates this worker's outcomes per level between two
// heartbeats, which add them to the fleet's rates in Redis (see
// queue.RateWindow): rates cost no Redis command per task.
type outcomeCounts struct {
	mu sync.Mutex
	m  map[int]queue.LevelCounts
}

// count applies f to the counts of level l.
func (r *Runtime) count(l int, f func(*queue.LevelCounts)) {
	o := &r.outcomes
	o.mu.Lock()
	if o.m == nil {
		o.m = map[int]queue.LevelCounts{}
	}
	c := o.m[l]
	f(&c)
	o.m[l] = c
	o.mu.Unlock()
}

// takeCounts returns the counts since the last take and starts afresh.
func (r *Runtime) takeCounts() map[int]queue.LevelCounts {
	o := &r.outcomes
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.m
	o.m = nil
	return m
}

// restoreCounts adds back counts a failed heartbeat could not deliver.
func (r *Runtime) restoreCounts(m map[int]queue.LevelCounts) {
	for l, c := range m {
		r.count(l, func(x *queue.LevelCounts) {
			x.Processed += c.Processed
			x.Failed += c.Failed
			x.Preempted += c.Preempted
			x.SLABreaches += c.SLABreaches
		})
	}
}
