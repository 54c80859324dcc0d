package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"github.com/overtake/overtake/handlers"

	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// Pausing (queue.Client.Pause). The paused levels are stored in Redis; a
// worker learns them from its heartbeat (the same command that reads the
// schema version, so it costs nothing) and, within a wake-up, from the
// message a pause publishes on the wake channel, which carries the new
// set. A paused level is skipped
// by every lease and reservation, so no task is taken from it and no
// preemption happens on its behalf; a lease sent before the worker heard
// of the pause still takes nothing from the level, since the lease script
// reads the paused key with the tasks it popped (no extra command) and
// puts back, untouched, those of a paused level. With queue.PausePreempt the level's
// running tasks are preempted here: each saves its checkpoint and goes back
// to the head of its level.

// pausedSet is the paused levels as this worker last heard them (from a
// heartbeat or a wake-up message), read by the lease calls, the wake-ups
// and the reclaim without a lock.
type pausedSet struct {
	m atomic.Pointer[map[int]queue.PauseMode]
}

// levels returns the paused levels, ascending (nil when none).
func (p *pausedSet) levels() []int {
	if m := p.m.Load(); m != nil && len(*m) > 0 {
		return slices.Sorted(maps.Keys(*m))
	}
	return nil
}

// mode returns how level l is paused (queue.NotPaused if it is not).
func (p *pausedSet) mode(l int) queue.PauseMode {
	if m := p.m.Load(); m != nil {
		return (*m)[l]
	}
	return queue.NotPaused
}

// set makes m the paused levels. It returns the levels newly paused
// with PausePreempt, and false if m is the set it had.
func (p *pausedSet) set(m map[int]queue.PauseMode) (preempt []int, changed bool) {
	if m == nil {
		m = map[int]queue.PauseMode{}
	}
	old := p.m.Swap(&m)
	if old != nil && maps.Equal(*old, m) {
		return nil, false
	}
	var was map[int]queue.PauseMode
	if old != nil {
		was = *old
	}
	for l, mode := range m {
		if mode == queue.PausePreempt && was[l] != queue.PausePreempt {
			preempt = append(preempt, l)
		}
	}
	return preempt, true
}

// setPaused applies the paused levels m (the wake listener's waker, and
// the heartbeater's): levels newly paused with PausePreempt have their
// running tasks preempted, and the dispatcher looks again (a resumed level
// may hold work).
func (d *dispatcher) setPaused(m map[int]queue.PauseMode) {
	preempt, changed := d.paused.set(m)
	if !changed {
		return
	}
	d.log.Info("paused levels changed", zap.Ints("paused", slices.Sorted(maps.Keys(m))))
	// The running tasks of each level newly paused with PausePreempt save
	// their checkpoint and are requeued at the head of their level, where
	// they wait for Resume.
	for _, l := range preempt {
		for _, v := range d.slots.pausedVictims(l) {
			d.preemptPaused(v)
		}
	}
	d.signal()
}

// preemptPaused preempts v, marked giving way, because its level is paused
// with PausePreempt.
func (d *dispatcher) preemptPaused(v *run) {
	d.outcomes.count(v.t.Level, func(c *store.LevelCounts) { c.Preempted++ })
	d.preemptor.counted.preempted.Add(1)
	v.log.Info("preempting the task: its level was paused")
	v.cancel(fmt.Errorf("%w: level %d paused", handlers.ErrPreempted, v.t.Level))
}
