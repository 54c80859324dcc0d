package runtime

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Autoscaling (Config.Autoscale for the one implicit pool, Pool.Autoscale
// with Pools): each pool's size follows its own band's backlog within its
// bounds, by the rule of Autoscale, from one round trip of depths for every
// pool; the runtime's concurrency is the pools' total. A change is logged,
// counted and reported to the fleet at once by a heartbeat, so fleet-wide
// free-slot checks see the new capacity without waiting for the next one.

// poolsAutoscale reports whether a pool autoscales, and the shortest
// interval among them.
func (r *Runtime) poolsAutoscale() (bool, time.Duration) {
	var every time.Duration
	for _, p := range r.pools {
		if a := p.autoscale; a != nil && (every == 0 || a.Interval < every) {
			every = a.Interval
		}
	}
	return every > 0, every
}

// poolAutoscaleLoop applies the pools' Autoscale until leasing stops.
func (r *Runtime) poolAutoscaleLoop(every time.Duration) {
	defer r.loops.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-r.stopLease:
			return
		case <-r.baseCtx.Done():
			return
		case now := <-tick.C:
			if err := r.autoscalePools(r.baseCtx, now); err != nil {
				r.log.Warn("autoscale: could not read the backlog", zap.Error(err))
			}
		}
	}
}

// autoscalePools resizes each pool whose Interval has passed since it was
// last looked at.
func (r *Runtime) autoscalePools(ctx context.Context, now time.Time) error {
	if r.redis.down() {
		return nil // no backlog to read; the dispatcher's probe tries Redis
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	depths, err := r.q.Depths(dctx)
	cancel()
	if err != nil {
		return err
	}
	changed := false
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		return nil
	}
	total := 0
	for i, p := range r.pools {
		a := p.autoscale
		if a != nil && now.Sub(p.scaledAt) >= a.Interval-a.Interval/10 {
			p.scaledAt = now
			var pending int64
			for _, l := range p.levels {
				pending += depths[l]
			}
			used := p.busy
			for _, rn := range r.waiting {
				if rn.slot == i {
					used++
				}
			}
			if next := a.next(p.size, used, pending); next != p.size {
				if next > p.size {
					r.stats.scaledUp.Add(1)
				} else {
					r.stats.scaledDown.Add(1)
				}
				r.log.Info("concurrency scaled", zap.String("pool", p.name), zap.Int("old", p.size), zap.Int("new", next),
					zap.Int64("backlog", pending), zap.Int("used", used))
				p.size, changed = next, true
			}
		}
		total += p.size
	}
	// Under mu, as free, preempt and startWaiting read sizes with busy.
	r.capacity.Store(int64(total))
	r.mu.Unlock()
	if !changed {
		return nil
	}
	r.signal() // lease into new slots now
	if err := r.beats.beat(ctx); err != nil && !errors.Is(err, context.Canceled) {
		r.log.Warn("could not report the new capacity; the next heartbeat will", zap.Error(err))
	}
	return nil
}
