package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// TestShardViews: a sharded lease allocates from the views it holds while
// they are under viewFresh old, and reads them again after that, at once
// for a shard this process wrote to, and before it leaves a slot free.
// Another producer's task (not this process's write) is what a held view
// can miss: a level 2 task in shard 1 is passed over while the views are
// fresh (the clock stands still), then leased once they age. Without the
// held views every lease would read every shard (and the first check
// fails); without the ageing, the dirty mark or the read before leaving
// a slot free, the later ones do.
func TestShardViews(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		other, err := New(e.rdb, e.c.cfg)
		require.NoError(t, err)
		for k := range 3 {
			e.enqueueIn(k, 3, 0, "low")
		}
		lease := func() *Task {
			t.Helper()
			res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
			require.NoError(t, err)
			if len(res.Tasks) == 0 {
				return nil
			}
			return res.Tasks[0]
		}
		require.Equal(t, 0, lease().Level)

		top := NewTask("t", nil)
		top.ID = idIn(1, 3, "other-top")
		_, err = other.Enqueue(e.ctx, top, Level(2))
		require.NoError(t, err)
		require.Equal(t, 0, lease().Level, "fresh views: the other producer's task is not seen yet")
		e.clk.Advance(viewFresh + time.Millisecond)
		require.Equal(t, top.ID, lease().ID, "aged views are read again")

		mine := e.enqueueIn(2, 3, 2, "mine-top")
		require.Equal(t, mine.ID, lease().ID, "a shard this process wrote to is read again at once")

		require.Equal(t, 0, lease().Level) // the last low task
		require.Nil(t, lease())
		late := NewTask("t", nil)
		late.ID = idIn(0, 3, "other-low")
		_, err = other.Enqueue(e.ctx, late, Level(0))
		require.NoError(t, err)
		require.Equal(t, late.ID, lease().ID, "views that leave a slot free are read again first")
	})
}

// TestShardViewsSpareGroup: a spare group (a pool borrowing idle slots)
// filling a slot the counted group left for want of tasks in the views
// held does not count as filling it: the views are read again first, so
// the counted group takes the task another producer enqueued in its
// levels (a pool's own work before borrowed work; without it the spare
// group took the slot while the pool's task waited, as the runtime's
// TestPoolsBorrowAndGiveBack found on 3 shards).
func TestShardViewsSpareGroup(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		other, err := New(e.rdb, e.c.cfg)
		require.NoError(t, err)
		e.enqueueIn(0, 3, 2, "high")
		e.enqueueIn(1, 3, 2, "high2")
		req := LeaseRequest{Worker: "w", Count: 1, Groups: []LeaseGroup{{Levels: []int{2}, Count: 1, Pool: 1}}}
		res, err := e.c.Lease(e.ctx, req) // the views are read
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)

		own := NewTask("t", nil)
		own.ID = idIn(2, 3, "own")
		_, err = other.Enqueue(e.ctx, own, Level(0))
		require.NoError(t, err)
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1, Groups: []LeaseGroup{
			{Levels: []int{0, 1}, Count: 1, Pool: 2}, {Levels: []int{2}, Spare: true}}})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		require.Equal(t, own.ID, res.Tasks[0].ID, "the pool's own task, not the borrowed one")
	})
}
