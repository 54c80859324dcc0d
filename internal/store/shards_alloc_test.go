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
	out := allocate(ws, d, ran, 0)
	require.Empty(t, out[0].groups)
	require.Empty(t, out[1].groups)
	require.Equal(t, []LeaseGroup{{Levels: []int{0}, Count: 1, Pool: 1}, {Levels: []int{0}, Count: 1, Pool: 2}},
		out[2].groups)
	require.Equal(t, []bool{true, true}, out[2].resumed)
	require.Equal(t, []int{2*0 + 1, 2*0 + 1}, []int{out[2].rank(0), out[2].rank(1)}, "resumed: before fresh tasks of the level")
}

// TestAllocateFromStart: fresh tasks of a level come first from the
// start shard, then from the next shards in turn.
func TestAllocateFromStart(t *testing.T) {
	ws := []want{{levels: []int{1, 0}, count: 7}}
	d := [][]int64{{5, 0}, {5, 0}, {0, 5}}
	ran := [][]int64{{0, 0}, {0, 0}, {0, 0}}
	out := allocate(ws, d, ran, 1)
	// Level 1 only in shard 2; then level 0 from shard 1 (the start) first.
	require.Equal(t, []LeaseGroup{{Levels: []int{1}, Count: 5}}, out[2].groups)
	require.Equal(t, []LeaseGroup{{Levels: []int{0}, Count: 2}}, out[1].groups)
	require.Empty(t, out[0].groups)
}

// TestLeaseStartRotates: with a level's tasks in every shard, the rounds
// start at each shard in turn, the one whose turn came longest ago first,
// and on a tie the one carrying the most acks; a shard the highest level
// does not reach is out of the rotation, whatever acks it carries; with
// no task in view, the round starts where the most acks wait.
func TestLeaseStartRotates(t *testing.T) {
	newViews := func() *shardViews { return &shardViews{turns: make([]uint64, 3)} }
	ws := []want{{levels: []int{1, 0}, count: 8}}

	v := newViews()
	level0 := [][]int64{{5, 0}, {5, 0}, {5, 0}}
	var starts []int
	for range 7 {
		k, rota := v.leaseStart(ws, level0, []int{3, 16, 0})
		require.Equal(t, []bool{true, true, true}, rota)
		starts = append(starts, k)
		v.took(k)
	}
	require.Equal(t, []int{1, 0, 2, 1, 0, 2, 1}, starts, "ties on the turn go to the most acks; then round the shards")
	k, _ := v.leaseStart(ws, level0, []int{3, 16, 0})
	require.Equal(t, 0, k, "a start not taken (no took) is no turn: the same shard again")
	k, _ = v.leaseStart(ws, level0, []int{3, 16, 0})
	require.Equal(t, 0, k)

	v = newViews()
	top := [][]int64{{5, 0}, {5, 0}, {0, 5}} // level 1 only in shard 2
	for range 3 {
		k, rota := v.leaseStart(ws, top, []int{3, 16, 0})
		require.Equal(t, 2, k, "the highest level's only shard, though shard 1 carries more acks")
		require.Equal(t, []bool{false, false, true}, rota)
		v.took(k)
	}

	v = newViews()
	full := []want{{levels: []int{1}, count: 0, pool: 1}, {levels: []int{0}, count: 4, pool: 2}}
	k, rota := v.leaseStart(full, top, []int{3, 16, 0})
	require.Equal(t, []bool{true, true, false}, rota, "level 1's group takes none: the rotation is level 0's")
	require.Equal(t, 1, k)

	v = newViews()
	none := [][]int64{{0, 0}, {0, 0}, {0, 0}}
	k, rota = v.leaseStart(ws, none, []int{3, 16, 0})
	require.Equal(t, 1, k, "no task in view: where the most acks wait")
	require.Equal(t, []bool{false, false, false}, rota)
}
