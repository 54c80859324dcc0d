package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// autoscaler moves the pools' sizes (Config.Autoscale for the one implicit
// pool, Pool.Autoscale with Pools): each pool's size follows its own
// band's backlog within its bounds, by the rule of Autoscale, from one
// round trip of depths for every pool; the runtime's concurrency is the
// pools' total. A change is logged, counted and reported to the fleet at
// once by a heartbeat, so fleet-wide free-slot checks see the new capacity
// without waiting for the next one. It owns the rules, when each pool was
// last looked at and the counts of changes; the sizes are the slots'
// (poolSizer).
type autoscaler struct {
	loops  startStop
	depths func(context.Context) (map[int]int64, error) // pending tasks by level
	log    *zap.Logger
	redis  *redisWatch
	halt   <-chan struct{} // closed when leasing stops
	slots  poolSizer
	report func(context.Context) error // a heartbeat: the new capacity to the fleet
	bands  []autoscaleBand             // by pool
	every  time.Duration               // the shortest Interval; 0 if no pool autoscales

	scaledUp, scaledDown atomic.Int64 // RunStats.ScaledUp, ScaledDown
}

// autoscaleBand is one pool as the autoscaler sees it.
type autoscaleBand struct {
	name     string
	levels   []int
	rule     *Autoscale // nil: the pool keeps its size
	scaledAt time.Time  // when it was last looked at
}

// poolSizer is what the autoscaler needs of the slots.
type poolSizer interface {
	// resize calls next with each pool's size and used slots (held, and
	// reserved for urgent tasks waiting), under the slots' lock, sets the
	// size it returns, and makes the total the runtime's concurrency;
	// false (next not called) while the runtime drains.
	resize(next func(p, size, used int) int) bool
	// signal wakes the dispatcher: slots were added.
	signal()
}

// newAutoscaler returns the autoscaler of pools.
func newAutoscaler(pools []*slotPool, a *autoscaler) *autoscaler {
	for _, p := range pools {
		a.bands = append(a.bands, autoscaleBand{name: p.name, levels: p.levels, rule: p.autoscale})
		if r := p.autoscale; r != nil && (a.every == 0 || r.Interval < a.every) {
			a.every = r.Interval
		}
	}
	return a
}

// start applies the rules every interval until leasing stops, if a pool
// autoscales.
func (a *autoscaler) start(ctx context.Context) {
	if a.every > 0 {
		a.loops.start(ctx, a.loop)
	}
}

// stop ends the autoscaling.
func (a *autoscaler) stop() { a.loops.stop() }

// loop applies the pools' Autoscale until leasing stops.
func (a *autoscaler) loop(ctx context.Context) {
	tick := time.NewTicker(a.every)
	defer tick.Stop()
	for {
		select {
		case <-a.halt:
			return
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if err := a.scale(ctx, now); err != nil {
				a.log.Warn("autoscale: could not read the backlog", zap.Error(err))
			}
		}
	}
}

// scale resizes each pool whose Interval has passed since it was last
// looked at.
func (a *autoscaler) scale(ctx context.Context, now time.Time) error {
	if a.redis.down() {
		return nil // no backlog to read; the dispatcher's probe tries Redis
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	depths, err := a.depths(dctx)
	cancel()
	if err != nil {
		return err
	}
	changed := false
	ok := a.slots.resize(func(p, size, used int) int {
		b := &a.bands[p]
		r := b.rule
		if r == nil || now.Sub(b.scaledAt) < r.Interval-r.Interval/10 {
			return size
		}
		b.scaledAt = now
		var pending int64
		for _, l := range b.levels {
			pending += depths[l]
		}
		next := r.next(size, used, pending)
		if next == size {
			return size
		}
		if next > size {
			a.scaledUp.Add(1)
		} else {
			a.scaledDown.Add(1)
		}
		a.log.Info("concurrency scaled", zap.String("pool", b.name), zap.Int("old", size), zap.Int("new", next),
			zap.Int64("backlog", pending), zap.Int("used", used))
		changed = true
		return next
	})
	if !ok || !changed {
		return nil
	}
	a.slots.signal() // lease into new slots now
	if err := a.report(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("could not report the new capacity; the next heartbeat will", zap.Error(err))
	}
	return nil
}
