package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// A heartbeat whose snapshot holds a task's old lease reports that lease
// lost; if the task was requeued and leased here again meanwhile, the new
// run (another token) must not be cancelled.
func TestStaleHeartbeatSparesNewLease(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err)
		rt, err := New(q, handlers.NewMux(), Config{WorkerID: "w"})
		require.NoError(t, err)
		_, err = q.Enqueue(ctx, queue.NewTask("x", nil))
		require.NoError(t, err)
		lease := func() *store.Task {
			res, err := store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "w"})
			require.NoError(t, err)
			require.Len(t, res.Tasks, 1)
			return res.Tasks[0]
		}
		old := lease()
		require.NoError(t, store.Of(q).Requeue(ctx, old, store.RequeueYield))
		cur := lease()
		require.NotEqual(t, old.Token, cur.Token)

		var cause error
		rn := &run{t: cur, cancel: func(err error) { cause = err }}
		rn.log.l = rt.log
		rt.slots.runs[cur.ID] = rn
		require.NoError(t, rt.beats.send(ctx, []*store.Task{old}, 1))
		require.NoError(t, cause, "the new run was cancelled by a stale heartbeat")

		// The run whose token went out is cancelled.
		rn = &run{t: old, cancel: func(err error) { cause = err }}
		rn.log.l = rt.log
		rt.slots.runs[cur.ID] = rn
		require.NoError(t, rt.beats.send(ctx, []*store.Task{old}, 1))
		require.True(t, errors.Is(cause, queue.ErrLeaseLost))
	})
}
