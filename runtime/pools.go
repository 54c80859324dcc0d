package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"errors"
	"fmt"
	"slices"
)

// Pool is a dedicated pool of slots for a band of levels, inside one
// runtime (Config.Pools): the Priority Queue pattern's "separate pool of
// consumers for each queue", with one Run, one heartbeat and one lease
// round trip however many pools there are. A pool's tasks run only in its
// own slots (or, with Borrow, in other pools' idle ones), so a flood of
// work at one band never starves another, and preemption happens inside
// a pool: an urgent task takes the slot of a lower task of its own pool,
// or of one of its pool's tasks that borrowed a slot elsewhere.
type Pool struct {
	// Name identifies the pool in logs, PoolStats, the fleet's per-pool
	// rates (queue.Stats.PoolRates) and `overtake stats`. Required,
	// unique, 1 to 64 letters, digits, '_', '.' or '-'.
	Name string
	// Levels are the queue levels whose tasks the pool runs. Every level
	// belongs to exactly one pool.
	Levels []int
	// Size is the pool's own slots, at least 1. No other band's task
	// takes them, except by borrowing them while they are idle.
	Size int
	// Borrow lets the pool's tasks run in other pools' idle slots when its
	// own are full. Off by default.
	Borrow bool
	// Reclaim says what happens when this pool's own work arrives while
	// another pool's task runs in one of its slots (borrowed while idle).
	// Defaults to ReclaimPreempt.
	Reclaim Reclaim
	// Autoscale, when set, lets the pool's size follow its own levels'
	// backlog within bounds, by the rule of Config.Autoscale (which, with
	// Pools, must be nil). Size is then the starting size and defaults to
	// Autoscale.Min.
	Autoscale *Autoscale
}

// Reclaim chooses how a pool gets back the slots another pool borrowed.
type Reclaim int

const (
	// ReclaimPreempt preempts the borrowed task (it saves its checkpoint
	// and is requeued at the head of its level) as soon as the owner's
	// work is pending.
	ReclaimPreempt Reclaim = iota
	// ReclaimWait lets the borrowed task finish; the owner's work takes
	// the slot when it frees.
	ReclaimWait
)

// PoolStats is a snapshot of one pool.
type PoolStats struct {
	Name   string
	Levels []int
	// Size is the pool's own slots; Busy of them are held, Lent by tasks of
	// other pools.
	Size, Busy, Lent int
	// Borrowed counts this pool's tasks running in other pools' slots.
	Borrowed int
}

// slotPool is a pool's state. Counts are guarded by slots.mu.
type slotPool struct {
	name    string
	levels  []int // ascending
	size    int   // slots (moved by autoscale under slots.mu)
	borrow  bool
	reclaim Reclaim
	busy    int // slots held (run.slot == this pool and run.holdsSlot)
	pending int // slots asked for by lease calls in flight (lease.go)
	// autoscale, if set, is the autoscaler's rule for size (which it
	// moves under slots.mu).
	autoscale *Autoscale
}

// errPools wraps every Pools configuration error.
var errPools = errors.New("Pools")

// validatePools checks that pools cover each of levels exactly once.
func validatePools(pools []Pool, levels int, concurrency int, autoscale *Autoscale) error {
	if len(pools) == 0 {
		return nil
	}
	if autoscale != nil {
		return fmt.Errorf("%w: set Autoscale on each pool (Pool.Autoscale), not on the runtime", errPools)
	}
	owner := make([]string, levels)
	names := map[string]bool{}
	total := 0
	for _, p := range pools {
		switch {
		case !store.ValidPoolName(p.Name) || names[p.Name]:
			return fmt.Errorf("%w: pool name %q is repeated or not 1 to 64 letters, digits, '_', '.' or '-'", errPools, p.Name)
		case p.Size < 1:
			return fmt.Errorf("%w: pool %q has size %d, want at least 1", errPools, p.Name, p.Size)
		case p.Autoscale.validate(p.Size) != nil:
			return fmt.Errorf("%w: pool %q: %w", errPools, p.Name, p.Autoscale.validate(p.Size))
		case len(p.Levels) == 0:
			return fmt.Errorf("%w: pool %q has no levels", errPools, p.Name)
		case p.Reclaim != ReclaimPreempt && p.Reclaim != ReclaimWait:
			return fmt.Errorf("%w: pool %q has unknown Reclaim %d", errPools, p.Name, p.Reclaim)
		}
		names[p.Name] = true
		total += p.Size
		for _, l := range p.Levels {
			if l < 0 || l >= levels {
				return fmt.Errorf("%w: pool %q: level %d is outside 0..%d", errPools, p.Name, l, levels-1)
			}
			if owner[l] != "" {
				return fmt.Errorf("%w: level %d is in pools %q and %q", errPools, l, owner[l], p.Name)
			}
			owner[l] = p.Name
		}
	}
	for l, o := range owner {
		if o == "" {
			return fmt.Errorf("%w: level %d is in no pool", errPools, l)
		}
	}
	if concurrency != 0 && concurrency != total {
		return fmt.Errorf("%w: Concurrency %d is not the pools' total size %d (leave it 0)", errPools, concurrency, total)
	}
	return nil
}

// newPools builds the runtime's pools: those configured, or one implicit
// pool of every level sized by Concurrency. It returns the pool of each
// level too.
func newPools(c Config, levels int) ([]*slotPool, []int) {
	poolOf := make([]int, levels)
	cfg := c.Pools
	if len(cfg) == 0 {
		all := make([]int, levels)
		for l := range all {
			all[l] = l
		}
		return []*slotPool{{name: "default", levels: all, size: c.Concurrency, autoscale: c.Autoscale}}, poolOf
	}
	out := make([]*slotPool, len(cfg))
	for i, p := range cfg {
		ls := slices.Clone(p.Levels)
		slices.Sort(ls)
		out[i] = &slotPool{name: p.Name, levels: ls, size: p.Size, borrow: p.Borrow, reclaim: p.Reclaim,
			autoscale: p.Autoscale}
		for _, l := range ls {
			poolOf[l] = i
		}
	}
	return out, poolOf
}

// poolNumber is pool p as the queue numbers slot pools (from 1; 0 without
// Config.Pools, whose one pool the fleet need not know).
func poolNumber(pools, p int) int {
	if pools == 1 {
		return 0
	}
	return p + 1
}

// PoolStats returns a snapshot of each pool, in Config.Pools order (one
// pool named "default" without Pools).
func (r *Runtime) PoolStats() []PoolStats { return r.slots.stats() }
