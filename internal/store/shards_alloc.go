package store

import (
	"math/rand/v2"
	"slices"
)

// The allocation of a sharded lease round (shards_lease.go): which
// shard's tasks fill the round's free slots, level by level, and the shard
// it starts at.

// shardAlloc is what a lease allocates in one shard: the groups of its
// call and, for each, the request's group it serves.
type shardAlloc struct {
	groups []LeaseGroup
	of     []int
	// resumed: each group takes only resumed heads (allocate's first pass).
	resumed []bool
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
// level's tasks from the shards in turn from start (leaseStart), except
// that a shard whose head of the level ran before (ran[k][l] of them,
// preempted tasks) gives those first. A spare group takes what the
// counted groups before it left free, in those groups' pools.
func allocate(ws []want, d [][]int64, ran [][]int64, start int) []shardAlloc {
	out := make([]shardAlloc, len(d))
	left := make([]int, len(ws)) // free slots each counted group leaves
	for gi, w := range ws {
		if w.spare {
			for pi := range gi {
				for left[pi] > 0 {
					n := take(out, d, ran, w.levels, left[pi], start, ws[pi].pool, gi)
					if n == 0 {
						break
					}
					left[pi] -= n
				}
			}
			continue
		}
		left[gi] = w.count - take(out, d, ran, w.levels, w.count, start, w.pool, gi)
	}
	return out
}

// take allocates up to n tasks of levels (highest first) from the shards
// for group gi, in pool pool, and returns how many.
func take(out []shardAlloc, d [][]int64, ran [][]int64, levels []int, n, start, pool, gi int) int {
	got := 0
	for _, l := range levels {
		for i := range 2 * len(d) {
			if got == n {
				return got
			}
			// First pass: the shards whose head ran before; second: all.
			k := (start + i) % len(d)
			if i < len(d) && ran[k][l] == 0 {
				continue
			}
			m := int(min(d[k][l], int64(n-got)))
			if i < len(d) {
				m = min(m, int(ran[k][l])) // the resumed heads, then every shard's
			}
			if m <= 0 {
				continue
			}
			// Taken from the head: the resumed ones first. What is left of
			// them goes to the next group's first pass (a request of
			// several groups), not behind the other shards' fresh tasks.
			ran[k][l] = max(ran[k][l]-int64(m), 0)
			d[k][l] -= int64(m)
			got += m
			out[k].groups = append(out[k].groups, LeaseGroup{Levels: []int{l}, Count: m, Pool: pool})
			out[k].of = append(out[k].of, gi)
			out[k].resumed = append(out[k].resumed, i < len(d))
		}
	}
	return got
}

// allocateViews allocates ws from vs (allocate), starting at leaseStart's
// shard, and returns how many tasks it allocated, how many of them to the
// counted groups (a spare group takes what they leave: slots it fills
// were left for want of tasks the counted groups could take), the start
// and the shards of the rotation (leaseStart). The round that sends the
// allocation gives the start its turn (took).
func (c *Store) allocateViews(ws []want, vs []shardView) (_ []shardAlloc, n, counted, start int, rota []bool) {
	carried := make([]int, len(c.shards))
	for k, s := range c.shards {
		carried[k] = s.carried.size()
	}
	d, ran := viewMatrix(vs)
	start, rota = c.views.leaseStart(ws, d, carried)
	allocs := allocate(ws, d, ran, start)
	for _, a := range allocs {
		for i, g := range a.groups {
			n += g.Count
			if !ws[a.of[i]].spare {
				counted += g.Count
			}
		}
	}
	return allocs, n, counted, start, rota
}

// leaseStart picks the shard a round's allocation starts at. The
// rotation is the shards holding tasks of the highest level that any shard
// holds of the groups of ws that take some (a count, or spare); of those,
// the one whose turn came longest ago (turns: the round that last started
// there, took), then the one carrying the most acks, then one at random.
// Under a backlog in several shards the rounds thus go round them, and a
// level's tasks interleave across the shards. Starting where the most
// acks wait, as before, kept starting at the shard just leased from (its
// tasks' acks were the ones waiting), and a level's tasks in the other
// shards waited for that shard's whole backlog (on 3 shards with a
// backlog in each, one shard gave no task in the first 60% of a drain). A
// shard of the rotation carries its acks until its turn, within as many
// rounds as the rotation has shards (leaseRound sends a shard's acks alone
// only out of the rotation, or past carryFlushMax). Without a rotation (no
// task of ws's levels in view) it starts where the most acks wait.
func (s *shardViews) leaseStart(ws []want, d [][]int64, carried []int) (start int, rota []bool) {
	rota = make([]bool, len(d))
	top := -1
	for _, w := range ws {
		if w.count < 1 && !w.spare {
			continue // a full pool's group takes nothing this round
		}
		for _, l := range w.levels {
			if l <= top {
				continue
			}
			for k := range d {
				if d[k][l] > 0 {
					top = l
					break
				}
			}
		}
	}
	for k := range d {
		rota[k] = top >= 0 && d[k][top] > 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	from := rand.IntN(len(d)) // ties: the first from a random shard
	start = -1
	for i := range d {
		k := (from + i) % len(d)
		switch {
		case top >= 0 && !rota[k]: // out of the rotation
		case start < 0:
			start = k
		case top >= 0 && s.turns[k] != s.turns[start]:
			if s.turns[k] < s.turns[start] {
				start = k
			}
		case carried[k] > carried[start]:
			start = k
		}
	}
	return start, rota
}

// took records that a round started at shard k (leaseStart's turns).
func (s *shardViews) took(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.round++
	s.turns[k] = s.round
}

// viewMatrix returns copies of vs's lengths and resumed heads, d[k][l]
// and ran[k][l], for allocate to take from.
func viewMatrix(vs []shardView) (d, ran [][]int64) {
	d, ran = make([][]int64, len(vs)), make([][]int64, len(vs))
	for k, v := range vs {
		d[k], ran[k] = slices.Clone(v.d), slices.Clone(v.ran)
	}
	return d, ran
}
