package runtime

import "sync/atomic"

// inbox is what wakes the dispatcher and what it finds on waking: a kick
// (a slot freed, a task arrived, the pools or the paused levels changed),
// a lease call that ended, the levels announced since it last looked, and
// whether to look as on its slow poll. Any goroutine posts; only the
// dispatcher takes.
type inbox struct {
	kick      chan struct{} // a slot freed or a task arrived (buffered, 1)
	leaseDone chan struct{} // a lease call ended (buffered, 1)
	// pollNow makes the dispatcher look for work as on its slow poll when
	// kick wakes it: Redis answered again, or the wake-up subscription
	// came back, after wake-ups may have been lost (lookNow).
	pollNow atomic.Bool
	level   atomic.Int64  // highest level announced since the dispatcher last looked
	mask    atomic.Uint64 // every level (below 64) announced since then, bit per level
}

// init makes b an empty inbox.
func (b *inbox) init() {
	b.kick, b.leaseDone = make(chan struct{}, 1), make(chan struct{}, 1)
	b.level.Store(-1)
}

// signal wakes the dispatcher without blocking.
func (b *inbox) signal() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// leaseEnded wakes the dispatcher for a lease call (or probe) that ended.
func (b *inbox) leaseEnded() {
	select {
	case b.leaseDone <- struct{}{}:
	default:
	}
}

// lookNow makes the dispatcher look for work at once, as on its slow
// poll: urgent work of every level included, whatever its backoff.
func (b *inbox) lookNow() {
	b.pollNow.Store(true)
	b.signal()
}

// raise records that a task of level l was announced, keeping the
// highest level since the dispatcher last looked.
func (b *inbox) raise(l int64) {
	if l >= 0 && l < 64 {
		b.mask.Or(1 << l)
	}
	for {
		cur := b.level.Load()
		if l <= cur || b.level.CompareAndSwap(cur, l) {
			return
		}
	}
}

// take returns and clears the highest level announced (-1 if none) and
// the mask of the levels announced.
func (b *inbox) take() (level int64, mask uint64) {
	return b.level.Swap(-1), b.mask.Swap(0)
}

// keep puts back what take returned, for the next look.
func (b *inbox) keep(level int64, mask uint64) {
	b.mask.Or(mask)
	if level >= 0 {
		b.raise(level)
	}
}
