package store

import (
	"slices"
)

// A round of a sharded lease (leaseRound) sends its calls in waves: the
// calls of a wave at once, a wave only once every call of the wave before
// it answered in time (its script ran before by, without error). Calls on
// several shards are not one atomic step: one can run after by (and lease
// nothing) or fail while another leases. So a task of a rank (its level,
// then whether it is a resumed head) is only ever in a wave after every
// task of a higher rank on another shard, and a round stops at a wave that
// did not all land: a lower task is never leased while a higher one the
// same allocation chose was refused (the inversion TestShardedStrictOrder
// counts; it found one on 6 shards when a call of a resumed head and fresh
// tasks ran late beside another shard's call of fresh ones).
//
// Most rounds allocate one rank (a backlog drains level by level): their
// waves are one, one call per shard, as many calls as before waves.

// leaseCall is one call of a round: shard k and its part of allocs[k]
// (a shardAlloc holding no group is a sweep alone).
type leaseCall struct {
	k int
	a shardAlloc
}

// rank orders the groups of a round: higher level first, and at a level
// the resumed heads (allocate's first pass) before fresh tasks.
func (a shardAlloc) rank(i int) int {
	r := 2 * a.groups[i].Levels[0]
	if a.resumed[i] {
		r++
	}
	return r
}

// waves splits allocs into the round's waves, in the order they go. The
// groups of one rank form a wave, one call per shard that has any; a
// rank's groups on the shard of a wave of one call alone join that call
// (one script leases them in order, atomically). Shards with no group but
// sweep[k] get a call of their own in the first wave (it leases nothing,
// so it orders nothing).
func waves(allocs []shardAlloc, sweep []bool) [][]leaseCall {
	var ranks []int
	for _, a := range allocs {
		for i := range a.groups {
			if r := a.rank(i); !slices.Contains(ranks, r) {
				ranks = append(ranks, r)
			}
		}
	}
	slices.Sort(ranks)
	slices.Reverse(ranks)
	var out [][]leaseCall
	for _, r := range ranks {
		var wave []leaseCall
		for k, a := range allocs {
			var part shardAlloc
			for i, g := range a.groups {
				if a.rank(i) == r {
					part.groups = append(part.groups, g)
					part.of = append(part.of, a.of[i])
					part.resumed = append(part.resumed, a.resumed[i])
				}
			}
			if len(part.groups) == 0 {
				continue
			}
			if n := len(out); n > 0 && len(out[n-1]) == 1 && out[n-1][0].k == k {
				last := &out[n-1][0].a
				last.groups = append(last.groups, part.groups...)
				last.of = append(last.of, part.of...)
				last.resumed = append(last.resumed, part.resumed...)
				continue
			}
			wave = append(wave, leaseCall{k: k, a: part})
		}
		if len(wave) > 0 {
			out = append(out, wave)
		}
	}
	for k, a := range allocs {
		if len(a.groups) > 0 || !sweep[k] {
			continue
		}
		if len(out) == 0 {
			out = append(out, nil)
		}
		out[0] = append(out[0], leaseCall{k: k})
	}
	return out
}
