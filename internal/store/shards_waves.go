package store

import (
	"slices"
)

// A round of a sharded lease (leaseRound) sends its calls in waves: the
// calls of a wave at once, a wave only once every call of the wave before
// it answered in time (its script ran before by, without error) and left
// no task its next wave would pass over (passedOver). Calls on
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
// groups of one rank form a wave, one call per shard that has any. Shards
// with no group but sweep[k] get a call of their own in the first wave (it
// leases nothing, so it orders nothing). Two ranks on one shard are two
// calls, not one: a call's count at a level is fixed, so a task that came
// to the head of that level since the view (a preempted one) would take a
// slot there and push out a task the allocation chose, and the call's
// lower groups would still lease (passedOver tells it between waves).
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
			if len(part.groups) > 0 {
				wave = append(wave, leaseCall{k: k, a: part})
			}
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

// passedOver reports whether a call's view after it (post[k], per level
// length and resumed heads; nil: not called) holds a task that wave's
// groups would pass over: of a level of the same request group (ws) above
// the level they lease, or a resumed head at it. The allocation took every
// such task the views held, so one is left only when it came since, or
// was pushed back by one that came to the head of its level since (a
// preempted task): the round ends there and the next allocates it.
func passedOver(ws []want, wave []leaseCall, post [][2][]int64) bool {
	next := make(map[int]int) // request group → its highest rank in wave
	for _, call := range wave {
		for i := range call.a.groups {
			gi := call.a.of[i]
			if r, ok := next[gi]; !ok || call.a.rank(i) > r {
				next[gi] = call.a.rank(i)
			}
		}
	}
	for gi, r := range next {
		for _, v := range post {
			if v[0] == nil {
				continue
			}
			for _, l := range ws[gi].levels {
				d, ran := v[0][l], v[1][l]
				if (ran > 0 && 2*l+1 > r) || (d > ran && 2*l > r) {
					return true
				}
			}
		}
	}
	return false
}
