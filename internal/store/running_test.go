package store

import (
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/stretchr/testify/require"
)

// Running lists the leased tasks with their records and the total;
// PendingPage pages a level's list head first; Tasks reads records in
// order and leaves out missing IDs; bad bounds are refused.
func TestRunningAndPendingPage(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		var pend []string
		for range 5 {
			pend = append(pend, e.enqueue("p", Level(1)).ID)
		}
		got, n, err := e.c.PendingPage(e.ctx, 1, 1, 2)
		require.NoError(t, err)
		require.Equal(t, pend[1:3], got)
		require.EqualValues(t, 5, n)
		got, n, err = e.c.PendingPage(e.ctx, 1, 10, 2)
		require.NoError(t, err)
		require.Empty(t, got)
		require.EqualValues(t, 5, n)

		run := e.leaseOne("w1")
		_, err = e.c.SaveCheckpoint(e.ctx, run.ID, run.Token, []byte("abc"))
		require.NoError(t, err)
		rs, total, err := e.c.Running(e.ctx, 0, 10)
		require.NoError(t, err)
		require.EqualValues(t, 1, total)
		require.Len(t, rs, 1)
		require.Equal(t, run.ID, rs[0].ID)
		require.Equal(t, "w1", rs[0].Worker)
		require.Equal(t, StateActive, rs[0].State)
		require.EqualValues(t, 1, rs[0].CheckpointSeq)
		require.Equal(t, []byte("abc"), rs[0].Checkpoint)
		require.False(t, rs[0].LeaseDeadline.IsZero())
		require.False(t, rs[0].LeasedAt.IsZero())

		ts, err := e.c.Tasks(e.ctx, []string{pend[4], "nope", pend[3]})
		require.NoError(t, err)
		require.Equal(t, []string{pend[4], pend[3]}, ids(ts))

		_, _, err = e.c.Running(e.ctx, -1, 10)
		require.ErrorIs(t, err, ErrInvalidTask)
		_, _, err = e.c.Running(e.ctx, 0, 0)
		require.ErrorIs(t, err, ErrInvalidTask)
		_, _, err = e.c.PendingPage(e.ctx, 3, 0, 1)
		require.ErrorIs(t, err, ErrInvalidLevel)
		_, _, err = e.c.PendingPage(e.ctx, 0, 0, 1001)
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}
