package runtime

import (
	"fmt"
	"time"
)

// Autoscale lets a runtime's concurrency follow the queue's backlog, within
// bounds. Every Interval the runtime reads the pending count of every level
// (queue.Client.Depths: one pipelined round trip of one LLEN per level) and
// sets its concurrency to
//
//	desired = clamp(used + ceil(pending / TargetBacklogPerWorker), Min, Max)
//
// where used is the slots this runtime has taken (running tasks and reserved
// urgent tasks waiting for a slot) and pending is the tasks waiting in all
// levels. It scales up to desired at once, and down by at most ScaleDownStep
// per Interval, so a backlog that comes and goes does not make it flap.
// Since desired is never below used, scaling down never goes below the tasks
// that are running and never cancels any: it only stops leasing new work.
//
// Each worker of a fleet sees the whole backlog, so N autoscaling workers
// add up to N × pending/TargetBacklogPerWorker slots between them for a
// while; those left idle scale back down. Raise TargetBacklogPerWorker
// with the size of the fleet if that matters.
//
// Autoscaling does not replace preemption: while the pool is saturated an
// urgent arrival still preempts (within one Interval, before the pool has
// grown), and the pool then grows for the backlog that remains.
type Autoscale struct {
	// Min and Max bound the concurrency: 1 ≤ Min ≤ Max. Config.Concurrency
	// is the starting value and must lie within them; it defaults to Min
	// when Autoscale is set.
	Min, Max int
	// Interval is how often the backlog is read. Defaults to 5 s.
	Interval time.Duration
	// TargetBacklogPerWorker is how many pending tasks call for one more
	// slot. Defaults to 1: one slot per pending task, up to Max.
	TargetBacklogPerWorker int
	// ScaleDownStep is the most the concurrency falls per Interval.
	// Defaults to 1.
	ScaleDownStep int
}

// DefaultAutoscaleInterval is the default Autoscale.Interval.
const DefaultAutoscaleInterval = 5 * time.Second

// withDefaults returns a copy of a with its defaults, or nil.
func (a *Autoscale) withDefaults() *Autoscale {
	if a == nil {
		return nil
	}
	c := *a
	if c.Interval == 0 {
		c.Interval = DefaultAutoscaleInterval
	}
	if c.TargetBacklogPerWorker == 0 {
		c.TargetBacklogPerWorker = 1
	}
	if c.ScaleDownStep == 0 {
		c.ScaleDownStep = 1
	}
	return &c
}

// validate checks a (with its defaults) against the starting concurrency.
func (a *Autoscale) validate(concurrency int) error {
	switch {
	case a == nil:
		return nil
	case a.Min < 1:
		return fmt.Errorf("Autoscale.Min must be at least 1, got %d", a.Min)
	case a.Max < a.Min:
		return fmt.Errorf("Autoscale.Max %d is under Autoscale.Min %d", a.Max, a.Min)
	case concurrency < a.Min || concurrency > a.Max:
		return fmt.Errorf("Concurrency %d is outside Autoscale bounds [%d, %d]", concurrency, a.Min, a.Max)
	case a.Interval <= 0:
		return fmt.Errorf("Autoscale.Interval %v must be positive", a.Interval)
	case a.TargetBacklogPerWorker < 1:
		return fmt.Errorf("Autoscale.TargetBacklogPerWorker must be at least 1, got %d", a.TargetBacklogPerWorker)
	case a.ScaleDownStep < 1:
		return fmt.Errorf("Autoscale.ScaleDownStep must be at least 1, got %d", a.ScaleDownStep)
	}
	return nil
}

// next returns the concurrency that follows cur when used slots are taken
// and pending tasks wait (see Autoscale).
func (a *Autoscale) next(cur, used int, pending int64) int {
	target := int64(a.TargetBacklogPerWorker)
	slots := pending / target
	if pending%target > 0 {
		slots++
	}
	want := int64(used) + min(slots, int64(a.Max))
	desired := int(min(max(want, int64(a.Min)), int64(a.Max)))
	if desired < cur {
		return max(desired, cur-a.ScaleDownStep)
	}
	return desired
}

// poolSize is the size of the ants pool: the largest concurrency plus room
// for victims winding down (StartImmediately) and for handlers stuck past
// their grace. The pool is not Tuned as the concurrency changes: the slot
// accounting (slots.capacity) is what bounds the running tasks, ants
// starts its goroutines on demand and retires idle ones, so a pool sized for
// the maximum costs nothing while small, and shrinking it under running
// handlers would only make Submit block the dispatcher.
//
// The ants pool has earlyMax goroutines more, for runs whose slot was
// freed while their ack waits for a lease call (ack.go): they count in
// neither poolSize nor the room it leaves.
func (c Config) poolSize() int {
	if c.Autoscale != nil {
		return 2 * c.Autoscale.Max
	}
	if len(c.Pools) > 0 {
		n := 0
		for _, p := range c.Pools {
			n += p.Size
			if p.Autoscale != nil {
				n += p.Autoscale.Max - p.Size
			}
		}
		return 2 * n
	}
	return 2 * c.Concurrency
}

// Concurrency returns how many tasks the runtime runs at once now: the
// configured Concurrency (the pools' total), or what the autoscaler last
// chose. Autoscaling is pool_autoscale.go's: without Pools, Config.Autoscale
// is the one implicit pool's.
func (r *Runtime) Concurrency() int { return r.slots.concurrency() }

// earlyMax bounds the runs whose slot was freed before their ack landed:
// twice the largest concurrency (see dispatcher.earlyRoom), at most one
// lease call's carried acks.
func (c Config) earlyMax() int { return min(c.poolSize(), maxCarried) }
