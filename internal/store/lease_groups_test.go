package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// Groups lease for several bands of levels in one call (a runtime's
// dedicated pools): each group up to its count from its own levels,
// highest first; a spare group takes what the counted ones left. The
// same holds on a queue of three shards, the tasks spread over them.
func TestLeaseGroups(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) { leaseGroups(t, shards) })
	}
}

func leaseGroups(t *testing.T, shards int) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels, c.Shards = 4, shards })
		ids := map[int][]string{}
		for l, n := range map[int]int{0: 3, 1: 2, 2: 3, 3: 1} {
			for range n {
				ids[l] = append(ids[l], e.enqueue("x", Level(l)).ID)
			}
		}
		levelsOf := func(ts []*Task) []int {
			var out []int
			for _, tk := range ts {
				out = append(out, tk.Level)
			}
			return out
		}
		// High band (2, 3) with 2 slots; bulk band (0, 1) with 3.
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Groups: []LeaseGroup{
			{Levels: []int{2, 3}, Count: 2}, {Levels: []int{1, 0}, Count: 3}}})
		require.NoError(t, err)
		require.Equal(t, []int{2, 3}, res.GroupCounts)
		require.Equal(t, []int{3, 2, 1, 1, 0}, levelsOf(res.Tasks))

		// Left: two at level 0, two at level 2. The bulk band has 3 slots,
		// and the high band may borrow what it leaves; level 2 is skipped
		// (paused), so the spare slot stays empty.
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Skip: []int{2}, Groups: []LeaseGroup{
			{Levels: []int{0, 1}, Count: 3}, {Levels: []int{2, 3}, Spare: true}}})
		require.NoError(t, err)
		require.Equal(t, []int{2, 0}, res.GroupCounts)
		require.Equal(t, []int{0, 0}, levelsOf(res.Tasks))
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Groups: []LeaseGroup{
			{Levels: []int{0, 1}, Count: 2}, {Levels: []int{2, 3}, Spare: true}}})
		require.NoError(t, err)
		require.Equal(t, []int{0, 2}, res.GroupCounts, "the spare group takes the idle slots")
		require.Equal(t, []int{2, 2}, levelsOf(res.Tasks))
		st := e.stats()
		require.EqualValues(t, 0, st.Levels[2].Pending)
		require.EqualValues(t, 9, st.Levels[0].Active+st.Levels[1].Active+st.Levels[2].Active+st.Levels[3].Active)
	})
}

func TestGroupArgs(t *testing.T) {
	require.Equal(t, []leaseGroupArgs{
		{Count: 2, Levels: []int{3, 1}},
		{Levels: []int{2}, Spare: true},
		{Levels: []int{}, Pool: "2"},
	}, groupArgs([]LeaseGroup{
		{Levels: []int{1, 3, 3, 9, -1}, Count: 2}, {Levels: []int{2, 0}, Spare: true, Pool: 3}, {Levels: []int{0}, Count: -4, Pool: 2},
	}, []int{0}, 4))
}
