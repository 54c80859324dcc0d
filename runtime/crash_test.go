package runtime_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Crashes: a worker that leased a task, saved a checkpoint and died (it
// never heartbeats, so its lease expires).

// crashedTask is a task leased by a crashed worker with a saved checkpoint.
type crashedTask struct {
	ID    string
	stale *store.Task // the crashed worker's copy, with its token
}

// crashWhileRunning enqueues a task of typ at level, leases it as worker "crashed",
// saves checkpoint v under that lease, and abandons it.
func crashWhileRunning(t *testing.T, q *queue.Client, typ string, level int, v any) crashedTask {
	t.Helper()
	ctx := context.Background()
	id := enqueue(t, q, typ, "", level)
	res, err := store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "crashed", MinLevel: level})
	require.NoError(t, err)
	require.Len(t, res.Tasks, 1)
	require.Equal(t, id, res.Tasks[0].ID)
	data, err := ckpt.JSON.Marshal(v)
	require.NoError(t, err)
	_, err = store.Of(q).SaveCheckpoint(ctx, id, res.Tasks[0].Token, data)
	require.NoError(t, err)
	return crashedTask{ID: id, stale: res.Tasks[0]}
}

type rowProgress struct{ Row int }

// A task whose worker crashed is recovered by a running runtime once its
// lease expires and resumes from the crashed worker's checkpoint; the
// crashed worker's token is fenced off.
func TestCrashedWorkerTaskResumesFromCheckpoint(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		ctx := context.Background()
		type seen struct {
			p           rowProgress
			ok          bool
			recoveries  int
			preemptions int
			attempt     int
		}
		resumed := make(chan seen, 2)
		idle := make(chan struct{}, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, ok, err := checkpoint.Load[rowProgress](ctx)
			if err != nil {
				return err
			}
			resumed <- seen{p, ok, tk.Recoveries, tk.Preemptions, tk.Attempt}
			return nil
		})
		mux.HandleFunc("probe", func(ctx context.Context, tk *queue.TaskInfo) error {
			idle <- struct{}{}
			return nil
		})
		crash := crashWhileRunning(t, q, "job", 0, rowProgress{Row: 1234})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2, PollInterval: fastPoll})
		// The runtime is up and running other work meanwhile.
		enqueue(t, q, "probe", "", 0)
		receive(t, idle, "runtime running")

		got := receive(t, resumed, "recovered task run")
		require.Equal(t, seen{p: rowProgress{Row: 1234}, ok: true, recoveries: 1}, got)
		requireDeleted(t, q, crash.ID)
		require.Empty(t, resumed, "task ran twice")

		// The crashed worker, were it to come back, changes nothing.
		_, err := store.Of(q).SaveCheckpoint(ctx, crash.ID, crash.stale.Token, []byte(`{"Row":1}`))
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		require.ErrorIs(t, store.Of(q).Ack(ctx, crash.stale), queue.ErrLeaseLost)
		require.Zero(t, rt.Stats().Preempted)
	})
}

// A crashed worker's task still counts as running in the fleet until its
// lease expires, so a saturated live worker first defers to it as the
// lower victim; once it is recovered, the live worker preempts for the
// urgent task, and the crashed task resumes from its checkpoint afterwards.
func TestCrashedWorkerTaskDefersPreemptionUntilRecovered(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		runs := newRunTally()
		midStarted := make(chan int, 4) // Preemptions at start
		midCancelled := make(chan struct{}, 4)
		urgentRan := make(chan string, 1)
		crashedRan := make(chan rowProgress, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("mid", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			midStarted <- tk.Preemptions
			if tk.Preemptions > 0 {
				leave(true)
				return nil
			}
			<-ctx.Done()
			if wasPreempted(ctx) {
				midCancelled <- struct{}{}
			}
			leave(false)
			return ctx.Err()
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			urgentRan <- tk.ID
			leave(true)
			return nil
		})
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			p, _, err := checkpoint.Load[rowProgress](ctx)
			if err != nil {
				leave(false)
				return err
			}
			crashedRan <- p
			leave(true)
			return nil
		})

		crash := crashWhileRunning(t, q, "low", 0, rowProgress{Row: 7})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll})
		midID := enqueue(t, q, "mid", "", 1)
		require.Equal(t, 0, receive(t, midStarted, "mid start"))
		urgentID := enqueue(t, q, "urgent", "", 2)

		require.Equal(t, urgentID, receive(t, urgentRan, "urgent run"))
		receive(t, midCancelled, "mid preempted")
		require.Equal(t, 1, receive(t, midStarted, "mid resumes"))
		require.Equal(t, rowProgress{Row: 7}, receive(t, crashedRan, "crashed task resumes"))
		for _, id := range []string{midID, urgentID, crash.ID} {
			requireDeleted(t, q, id)
		}
		require.Equal(t, 1, runs.maxConcurrent())
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		requireInvariant4(t, rt)
	})
}
