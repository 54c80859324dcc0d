package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAllocateResumedAcrossGroups: a request of two groups of one slot
// each, on 3 shards at one level, where shard 2's head holds two resumed
// tasks (preempted ones) and every shard fresh ones: both slots go to
// shard 2's resumed heads, the second group's too, however the shards'
// carried acks order them (shard 0 carries the most: it would come first
// for fresh tasks).
func TestAllocateResumedAcrossGroups(t *testing.T) {
	ws := []want{{levels: []int{0}, count: 1, pool: 1}, {levels: []int{0}, count: 1, pool: 2}}
	d := [][]int64{{5}, {5}, {5}}
	ran := [][]int64{{0}, {0}, {2}}
	out := allocate(ws, d, ran, []int{9, 0, 0})
	require.Empty(t, out[0].groups)
	require.Empty(t, out[1].groups)
	require.Equal(t, []LeaseGroup{{Levels: []int{0}, Count: 1, Pool: 1}, {Levels: []int{0}, Count: 1, Pool: 2}},
		out[2].groups)
	require.Equal(t, []bool{true, true}, out[2].resumed)
	require.Equal(t, []int{2*0 + 1, 2*0 + 1}, []int{out[2].rank(0), out[2].rank(1)}, "resumed: before fresh tasks of the level")
}

// TestAllocateStartsWhereAcksWait: fresh tasks of a level come first from
// the shard that carries the most acks, so the call that leases carries
// them; then from the next shards in turn.
func TestAllocateStartsWhereAcksWait(t *testing.T) {
	ws := []want{{levels: []int{1, 0}, count: 7}}
	d := [][]int64{{5, 0}, {5, 0}, {0, 5}}
	ran := [][]int64{{0, 0}, {0, 0}, {0, 0}}
	out := allocate(ws, d, ran, []int{3, 16, 0})
	// Level 1 only in shard 2; then level 0 from shard 1 (16 acks) first.
	require.Equal(t, []LeaseGroup{{Levels: []int{1}, Count: 5}}, out[2].groups)
	require.Equal(t, []LeaseGroup{{Levels: []int{0}, Count: 2}}, out[1].groups)
	require.Empty(t, out[0].groups)
}
