package store

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
)

// A lease on a queue of several shards keeps one strict priority order
// across them in two steps. First one pipeline reads the length of every
// level's list in every shard (shardDepths: LLEN only, K·levels commands
// in one round trip, one per master on a Cluster). The worker then
// allocates its free slots from the top level down, across the shards,
// group by group as a one-shard lease would (allocate), and second sends
// one lease call to each shard it allocated slots in, all at once, each
// asking for exactly its allocation, level by level: a shard never gives a
// task of a level the allocation did not choose. A task of a higher level
// that arrives between the steps, one round trip, is seen by the next
// lease; one that another worker took meanwhile leaves the slot free for
// the next lease. A shard whose sweep is due (promotion of due tasks,
// recovery of expired leases, aging) is called even with nothing
// allocated, so every shard is swept as often as a one-shard queue.

// shardAlloc is what a lease allocates in one shard: the groups of its
// call and, for each, the request's group it serves.
type shardAlloc struct {
	groups []LeaseGroup
	of     []int
}

// want is one group of a request as allocate reads it: its levels, highest
// first, without skipped ones, how many it takes and its pool.
type want struct {
	levels []int
	count  int
	pool   int
	spare  bool
}

// wants turns req into groups: its Groups, else one group of Count tasks
// from the top level down to MinLevel.
func (c *Store) wants(req LeaseRequest) []want {
	if len(req.Groups) == 0 {
		w := want{count: req.Count}
		for l := c.cfg.Levels - 1; l >= max(req.MinLevel, 0); l-- {
			if !slices.Contains(req.Skip, l) {
				w.levels = append(w.levels, l)
			}
		}
		return []want{w}
	}
	out := make([]want, 0, len(req.Groups))
	for _, g := range groupArgs(req.Groups, req.Skip, c.cfg.Levels) {
		out = append(out, want{levels: g.Levels, count: g.Count, pool: req.Groups[len(out)].Pool, spare: g.Spare})
	}
	return out
}

// allocate splits ws over the shards given d (d[k][l]: level l's length in
// shard k, taken from as allocated), level by level from the top, each
// level's tasks from the shards in turn from a random one (so that no
// shard's head waits behind another's). A spare group takes what the
// counted groups before it left free, in those groups' pools.
func allocate(ws []want, d [][]int64) []shardAlloc {
	out := make([]shardAlloc, len(d))
	start := rand.IntN(len(d))
	left := make([]int, len(ws)) // free slots each counted group leaves
	for gi, w := range ws {
		if w.spare {
			for pi := range gi {
				for left[pi] > 0 {
					n := take(out, d, w.levels, left[pi], start, ws[pi].pool, gi)
					if n == 0 {
						break
					}
					left[pi] -= n
				}
			}
			continue
		}
		left[gi] = w.count - take(out, d, w.levels, w.count, start, w.pool, gi)
	}
	return out
}

// take allocates up to n tasks of levels (highest first) from the shards
// for group gi, in pool pool, and returns how many.
func take(out []shardAlloc, d [][]int64, levels []int, n, start, pool, gi int) int {
	got := 0
	for _, l := range levels {
		for i := range d {
			if got == n {
				return got
			}
			k := (start + i) % len(d)
			m := int(min(d[k][l], int64(n-got)))
			if m <= 0 {
				continue
			}
			d[k][l] -= int64(m)
			got += m
			out[k].groups = append(out[k].groups, LeaseGroup{Levels: []int{l}, Count: m, Pool: pool})
			out[k].of = append(out[k].of, gi)
		}
	}
	return got
}

// leaseShards is Lease on a queue of several shards (see above).
func (c *Store) leaseShards(ctx context.Context, req LeaseRequest) (*LeaseResult, error) {
	if req.Worker == "" {
		return nil, errors.New("overtake: lease: empty worker ID")
	}
	if req.Count < 1 {
		req.Count = 1
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	d, err := c.shardDepths(ctx)
	if err != nil {
		return nil, wrapf(err, "lease")
	}
	ws := c.wants(req)
	allocs := allocate(ws, d)
	now := c.now()
	type reply struct {
		res *LeaseResult
		err error
	}
	replies := make([]reply, len(c.shards))
	var wg sync.WaitGroup
	for k, s := range c.shards {
		a := allocs[k]
		if len(a.groups) == 0 && !s.sweep.pending(now) {
			continue
		}
		sub := LeaseRequest{Worker: req.Worker, Skip: req.Skip, Groups: a.groups}
		if len(sub.Groups) == 0 {
			sub.Groups = []LeaseGroup{{}} // a sweep alone: no task
		}
		wg.Go(func() {
			res, _, err := s.lease(ctx, sub, nil)
			replies[k] = reply{res, err}
		})
	}
	wg.Wait()
	out := &LeaseResult{GroupCounts: make([]int, len(req.Groups))}
	var firstErr error
	ok := false
	for k, r := range replies {
		if r.err != nil {
			firstErr = cmp.Or(firstErr, r.err)
			continue
		}
		if r.res == nil {
			continue
		}
		ok = true
		res := r.res
		out.Tasks = append(out.Tasks, res.Tasks...)
		out.Malformed = append(out.Malformed, res.Malformed...)
		out.Corrupt = append(out.Corrupt, res.Corrupt...)
		out.SetAside = append(out.SetAside, res.SetAside...)
		if !res.NextDue.IsZero() && (out.NextDue.IsZero() || res.NextDue.Before(out.NextDue)) {
			out.NextDue = res.NextDue
		}
		for j, n := range res.GroupCounts {
			if j < len(allocs[k].of) && allocs[k].of[j] < len(out.GroupCounts) {
				out.GroupCounts[allocs[k].of[j]] += n
			}
		}
	}
	if !ok && firstErr != nil {
		return nil, firstErr
	}
	if len(req.Groups) == 0 {
		out.GroupCounts = nil
	}
	// Highest level first, as from one shard.
	slices.SortStableFunc(out.Tasks, func(a, b *Task) int { return cmp.Compare(b.Level, a.Level) })
	return out, nil
}

// reserveShard picks the shard a reservation leases from: the one whose
// highest pending level at req.MinLevel or above (and not skipped) is the
// highest, the first from a random start on a tie. ErrNoTask when none
// has one.
func (c *Store) reserveShard(ctx context.Context, req ReserveRequest) (*Store, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	d, err := c.shardDepths(ctx)
	if err != nil {
		return nil, wrapf(err, "reserve")
	}
	best, bestL := -1, -1
	start := rand.IntN(len(d))
	for i := range d {
		k := (start + i) % len(d)
		for l := c.cfg.Levels - 1; l >= max(req.MinLevel, 0) && l > bestL; l-- {
			if d[k][l] > 0 && !slices.Contains(req.Skip, l) && !slices.Contains(req.NeverPreempt, l) {
				best, bestL = k, l
				break
			}
		}
	}
	if best < 0 {
		return nil, ErrNoTask
	}
	return c.shards[best], nil
}
