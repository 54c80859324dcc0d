package runtime

import (
	"github.com/overtake/overtake/internal/engine"

	"context"
	"time"
)

// leaseFree leases tasks for the free slots of every pool (frees, by pool)
// in one round trip and starts them. more reports that every slot asked
// for was filled, so more tasks may be waiting.
func (r *Runtime) leaseFree(frees []int) (more bool, next time.Time, err error) {
	// Never lease more than the pool can start at once: handlers that
	// ignored cancellation still hold pool workers.
	frees = append([]int(nil), frees...)
	room, free := r.poolRoom(), 0
	for p := range frees {
		frees[p] = max(min(frees[p], room-free), 0)
		free += frees[p]
	}
	if free <= 0 {
		return false, time.Time{}, nil
	}
	req := engine.LeaseRequest{Worker: r.cfg.WorkerID, Count: free, Skip: r.pausedLevels()}
	if len(r.pools) > 1 {
		req.Groups = r.leaseGroups(frees)
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
	defer cancel()
	res, err := r.eng.Lease(ctx, req)
	if err != nil {
		return false, time.Time{}, err
	}
	r.killMalformed(res)
	r.logCorrupt(res)
	for _, t := range res.Tasks {
		rn := r.newRun(t)
		rn.slot = r.slotFor(t.Level, frees)
		r.start(rn, true)
	}
	n := len(res.Tasks) + len(res.Malformed)
	return n > 0 && n == free, res.NextDue, nil
}

// leaseGroups asks, for each pool with free slots, for tasks of its band,
// then, for each pool that may borrow, for tasks of its band in the slots
// the others leave idle.
func (r *Runtime) leaseGroups(frees []int) []engine.LeaseGroup {
	var gs []engine.LeaseGroup
	lendable := 0
	for p, f := range frees {
		if f > 0 {
			gs = append(gs, engine.LeaseGroup{Levels: r.pools[p].levels, Count: f, Pool: p + 1})
			lendable += f
		}
	}
	for p, pl := range r.pools {
		if pl.borrow && lendable > frees[p] {
			gs = append(gs, engine.LeaseGroup{Levels: pl.levels, Spare: true})
		}
	}
	return gs
}

// slotFor picks the slot of a task leased at level: its own pool's while
// it has one free (the lease script fills own slots first), else a free
// slot of another pool, borrowed. frees is updated.
func (r *Runtime) slotFor(level int, frees []int) int {
	p := r.bandOf(level)
	if frees[p] > 0 {
		frees[p]--
		return p
	}
	for q, f := range frees {
		if f > 0 {
			frees[q]--
			return q
		}
	}
	return p // (not reached: the lease took no more than the free slots)
}
