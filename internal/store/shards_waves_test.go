package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// shardRanks lists each wave's calls as shard → the ranks of its groups.
func shardRanks(ws [][]leaseCall) []map[int][]int {
	out := make([]map[int][]int, len(ws))
	for i, w := range ws {
		out[i] = map[int][]int{}
		for _, c := range w {
			out[i][c.k] = []int{}
			for g := range c.a.groups {
				out[i][c.k] = append(out[i][c.k], c.a.rank(g))
			}
		}
	}
	return out
}

// alloc is a shardAlloc of groups of one task each at levels, resumed
// where res says.
func alloc(levels []int, res []bool) shardAlloc {
	var a shardAlloc
	for i, l := range levels {
		a.groups = append(a.groups, LeaseGroup{Levels: []int{l}, Count: 1})
		a.of = append(a.of, i)
		a.resumed = append(a.resumed, res[i])
	}
	return a
}

// TestWaves: a round's calls go in waves by rank (level, then resumed
// heads before fresh tasks), so that no call leases a lower rank beside
// a call of a higher one that might not land, two ranks of a shard in two
// calls; one rank is one wave of a call per shard.
func TestWaves(t *testing.T) {
	none := []bool{false, false, false}
	// One rank on every shard: one wave, one call each, as before waves.
	one := []shardAlloc{alloc([]int{2}, []bool{false}), alloc([]int{2}, []bool{false}), alloc([]int{2}, []bool{false})}
	require.Equal(t, []map[int][]int{{0: {4}, 1: {4}, 2: {4}}}, shardRanks(waves(one, none)))

	// Shard 1 holds a resumed head and fresh tasks of level 0, shard 0
	// fresh ones: shard 1's resumed head first, then the fresh ones.
	mixed := []shardAlloc{alloc([]int{0}, []bool{false}), alloc([]int{0, 0}, []bool{true, false}), {}}
	require.Equal(t, []map[int][]int{{1: {1}}, {0: {0}, 1: {0}}}, shardRanks(waves(mixed, none)))

	// Levels interleaved over shards: 2 and 0 on shard 0, 1 on shard 1.
	inter := []shardAlloc{alloc([]int{2, 0}, []bool{false, false}), alloc([]int{1}, []bool{false}), {}}
	require.Equal(t, []map[int][]int{{0: {4}}, {1: {2}}, {0: {0}}}, shardRanks(waves(inter, none)))

	// Two shards' resumed heads, then fresh tasks on both and a third:
	// the fresh ones wait for both resumed calls.
	two := []shardAlloc{alloc([]int{1, 1}, []bool{true, false}), alloc([]int{1}, []bool{true}), alloc([]int{1}, []bool{false})}
	require.Equal(t, []map[int][]int{{0: {3}, 1: {3}}, {0: {2}, 2: {2}}}, shardRanks(waves(two, none)))

	// A shard due a sweep with nothing allocated is called in the first wave.
	require.Equal(t, []map[int][]int{{1: {1}, 2: {}}, {0: {0}, 1: {0}}},
		shardRanks(waves(mixed, []bool{true, false, true})))
	require.Equal(t, []map[int][]int{{2: {}}}, shardRanks(waves(make([]shardAlloc, 3), []bool{false, false, true})))
}

// TestPassedOver: a round stops before a wave whose groups would pass
// over a task the calls before it left (their replies' views): of a
// higher level of the same request group, or a resumed head at the level
// the wave's fresh tasks take; not for a level the group does not take,
// nor for what only lower waves would pass.
func TestPassedOver(t *testing.T) {
	ws := []want{{levels: []int{2, 1, 0}, count: 3}, {levels: []int{0}, count: 1}}
	low := []leaseCall{{k: 0, a: alloc([]int{0}, []bool{false})}} // group 0 takes a fresh level 0 task
	view := func(d, ran []int64) [2][]int64 { return [2][]int64{d, ran} }
	none := make([][2][]int64, 3)
	require.False(t, passedOver(ws, low, none), "no call yet")

	left := [][2][]int64{{}, view([]int64{4, 1, 0}, []int64{0, 0, 0}), {}}
	require.True(t, passedOver(ws, low, left), "a level 1 task left in shard 1")

	heads := [][2][]int64{{}, view([]int64{4, 0, 0}, []int64{1, 0, 0}), {}}
	require.True(t, passedOver(ws, low, heads), "a resumed level 0 head left: fresh level 0 waits")
	resumedWave := []leaseCall{{k: 2, a: alloc([]int{0}, []bool{true})}}
	require.False(t, passedOver(ws, resumedWave, heads), "a wave of resumed heads does not pass another")

	fresh := [][2][]int64{{}, view([]int64{4, 0, 0}, []int64{0, 0, 0}), {}}
	require.False(t, passedOver(ws, low, fresh), "fresh tasks of the level it takes")

	other := []leaseCall{{k: 0, a: shardAlloc{groups: []LeaseGroup{{Levels: []int{0}, Count: 1}}, of: []int{1},
		resumed: []bool{false}}}}
	require.False(t, passedOver(ws, other, left), "group 1 (a pool of level 0) does not take level 1")
}

// TestLeaseResumedGroup: a group of resumed heads (a sharded lease's
// first pass) takes only tasks at its level's head that ran before, never
// a fresh one behind them: another worker may have taken the heads the
// view counted, and a fresh task must not pass another shard's resumed
// head in their place.
func TestLeaseResumedGroup(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		s := e.c.shards[1]
		resumed := func(n int) []*Task {
			t.Helper()
			res, _, err := s.lease(e.ctx, LeaseRequest{Worker: "w", Count: n,
				Groups: []LeaseGroup{{Levels: []int{0}, Count: n, resumed: true}}}, nil)
			require.NoError(t, err)
			return res.Tasks
		}
		p := e.enqueueIn(1, 3, 0, "p")
		got := e.lease("w", 1)
		require.Equal(t, p.ID, got[0].ID)
		fresh := e.enqueueIn(1, 3, 0, "fresh")
		require.Empty(t, resumed(1), "a fresh head is not taken")

		require.NoError(t, e.c.Requeue(e.ctx, got[0], RequeuePreempted))
		tasks := resumed(2)
		require.Len(t, tasks, 1, "the resumed head only, not the fresh one behind it")
		require.Equal(t, p.ID, tasks[0].ID)
		tasks = e.lease("w", 1)
		require.Equal(t, fresh.ID, tasks[0].ID, "the fresh task is still there")
	})
}
