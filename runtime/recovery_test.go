package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

type recProgress struct{ Step int }

// recoveredRun is what a handler saw when it resumed a recovered task.
type recoveredRun struct {
	ID         string
	Progress   recProgress
	Recoveries int
	Attempt    int
}

// A worker that crashed (it leased a task, saved a checkpoint, and never
// sent a heartbeat again) loses the task when its lease expires: an idle
// runtime wakes at that deadline (not at its slow poll), recovers the task
// and resumes it from the checkpoint. The crashed worker's late writes are
// fenced off with queue.ErrLeaseLost.
func TestLeaseExpiryRecoversCrashedWorker(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q := setup(t, b, queue.Config{})
		crashed := setup(t, b, queue.Config{LeaseDuration: 300 * time.Millisecond})
		id := enqueue(t, q, "job", "", 1)
		res, err := store.Of(crashed).Lease(ctx, store.LeaseRequest{Worker: "crashed-worker", Count: 1})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		stale := res.Tasks[0]
		require.Equal(t, id, stale.ID)
		_, err = store.Of(crashed).SaveCheckpoint(ctx, id, stale.Token, []byte(`{"Step":3}`))
		require.NoError(t, err)

		resumed := make(chan recoveredRun, 2)
		finish := make(chan struct{})
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, _, err := checkpoint.Load[recProgress](ctx)
			assert.NoError(t, err)
			resumed <- recoveredRun{tk.ID, p, tk.Recoveries, tk.Attempt}
			<-finish
			return nil
		})
		startRuntime(t, q, mux, runtime.Config{PollInterval: time.Minute})
		got := receive(t, resumed, "the recovered task")
		require.Equal(t, recoveredRun{id, recProgress{Step: 3}, 1, 0}, got)

		// The crashed worker wakes up: it can neither save, nor finish.
		_, err = store.Of(crashed).SaveCheckpoint(ctx, id, stale.Token, []byte(`{"Step":4}`))
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		require.ErrorIs(t, store.Of(crashed).Ack(ctx, stale), queue.ErrLeaseLost)
		require.ErrorIs(t, store.Of(crashed).DeadLetter(ctx, stale, "stale"), queue.ErrLeaseLost)
		tk, err := q.Inspect(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StateActive, tk.State, "the stale ack changed the task")
		require.JSONEq(t, `{"Step":3}`, string(tk.Checkpoint))

		close(finish)
		waitGone(t, q, id)
		require.Empty(t, resumed, "the task ran twice")
	})
}

// Runtime A holds a task whose lease it can no longer keep (its clock is an
// hour behind, so every deadline it writes is already past, as if its
// heartbeats never arrived). Runtime B recovers the task and runs it from
// A's checkpoint; A's heartbeat learns that the lease was lost and cancels
// its handler with queue.ErrLeaseLost; A's late save and ack are fenced off, and
// its result is dropped.
func TestLeaseLostToAnotherRuntime(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q := setup(t, b, queue.Config{})
		qA, err := queue.New(b.NewClient(t), queue.Config{Namespace: b.Prefix, Shards: testShards(t),
			Clock: func() time.Time { return time.Now().Add(-time.Hour) }})
		require.NoError(t, err)

		aStarted := make(chan *store.Task, 1) // A's record while it runs, with its lease token
		aCause := make(chan error, 1)
		aLateSave := make(chan error, 1)
		release := make(chan struct{})
		resumed := make(chan recoveredRun, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, ok, err := checkpoint.Load[recProgress](ctx)
			assert.NoError(t, err)
			if ok {
				resumed <- recoveredRun{tk.ID, p, tk.Recoveries, tk.Attempt}
				return nil
			}
			assert.NoError(t, checkpoint.Save(ctx, recProgress{Step: 1}))
			rec, err := store.Of(qA).Inspect(ctx, tk.ID)
			assert.NoError(t, err)
			aStarted <- rec
			<-ctx.Done()
			aCause <- context.Cause(ctx)
			<-release
			aLateSave <- checkpoint.Save(ctx, recProgress{Step: 99})
			return nil
		})
		logA, logsA := observedLogger(t)
		startRuntime(t, qA, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 50 * time.Millisecond, Logger: logA})
		id := enqueue(t, q, "job", "", 0)
		stale := receive(t, aStarted, "A to start the task")
		require.Equal(t, id, stale.ID)

		startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
		require.Equal(t, recoveredRun{id, recProgress{Step: 1}, 1, 0}, receive(t, resumed, "B to resume the task"))
		waitGone(t, q, id)
		require.ErrorIs(t, receive(t, aCause, "A's handler to be cancelled"), queue.ErrLeaseLost)
		require.ErrorIs(t, store.Of(qA).Ack(ctx, stale), queue.ErrLeaseLost)

		close(release)
		require.ErrorIs(t, receive(t, aLateSave, "A's late save"), queue.ErrLeaseLost)
		waitForLog(t, logsA, "A dropping its result", func(e observer.LoggedEntry) bool {
			eid, _ := fieldString(e, "task_id")
			return eid == id && e.Message == "lease lost while running; result dropped"
		})
		_, err = q.Inspect(ctx, id)
		require.ErrorIs(t, err, queue.ErrTaskNotFound, "A's late result resurrected the task")
	})
}
