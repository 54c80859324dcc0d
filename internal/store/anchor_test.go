package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// The lease sets hold the anchor beside their tasks, which keeps them
// skiplists on a real Redis (a listpack scans the whole set on every
// update), and no reader sees it: not the sets' tasks, not Running's page
// or total, not the next lease expiry of an empty lease call.
func TestLeaseSetsAnchor(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		for _, id := range []string{"a", "b", "c"} {
			e.enqueue("", ID(id), Level(1))
		}
		got := e.lease("w", 2)
		require.Equal(t, []string{"a", "b"}, ids(got))
		for _, k := range []string{e.c.keys.leases(), e.c.keys.running()} {
			require.Contains(t, e.rdb.ZRange(e.ctx, k, 0, -1).Val(), anchorMember, "%s holds the anchor", k)
			require.Equal(t, []string{"a", "b"}, e.zset(k))
			if !b.IsMini() {
				require.Equal(t, "skiplist", e.rdb.ObjectEncoding(e.ctx, k).Val(), "%s with 3 members", k)
			}
		}
		running, total, err := e.c.Running(e.ctx, 0, 10)
		require.NoError(t, err)
		require.EqualValues(t, 2, total, "the anchor is not counted")
		require.Equal(t, []string{"a", "b"}, ids(running))

		for _, tk := range got {
			require.NoError(t, e.c.Ack(e.ctx, tk))
		}
		running, total, err = e.c.Running(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, running)
		require.Equal(t, []string{"c"}, ids(e.lease("w", 2)))
		require.NoError(t, e.c.Ack(e.ctx, e.inspect("c")))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.True(t, res.NextDue.IsZero(), "no lease left to expire: the anchor is none (got %v)", res.NextDue)
	})
}

// No task may take the anchor's name.
func TestAnchorIDRefused(t *testing.T) {
	e := newEnv(t, testredis.Backends(t)[0], nil)
	_, err := e.c.Enqueue(e.ctx, NewTask("x", nil), ID(anchorMember))
	require.ErrorIs(t, err, ErrInvalidTask)
	_, err = e.c.EnqueueBatch(e.ctx, []*Task{{Info: Info{Type: "x", ID: anchorMember}}})
	require.ErrorIs(t, err, ErrInvalidTask)
}
