package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

type shutProgress struct{ Step int }

// resumedRun is what a handler saw when it resumed a task.
type resumedRun struct {
	ID          string
	Progress    shutProgress
	Attempt     int
	Preemptions int
}

// Shutdown preempts every running task with the cause handlers.ErrShutdown: each
// saves its checkpoint and is requeued at the head of its level with its
// attempt and preemption counts unchanged; a new runtime resumes them from
// their checkpoints. Shutdown twice is safe.
func TestShutdownRequeuesRunningTasksAtHead(t *testing.T) {
	skipOnShards(t, "FIFO within a level holds per shard, not across shards")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const running = 3
		q := setup(t, b, queue.Config{})
		started := make(chan string, running)
		causes := make(chan error, running)
		resumed := make(chan resumedRun, running)
		laterRan := make(chan string, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("long", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, ok, err := checkpoint.Load[shutProgress](ctx)
			if !assert.NoError(t, err) {
				return err
			}
			if ok {
				resumed <- resumedRun{tk.ID, p, tk.Attempt, tk.Preemptions}
				return nil
			}
			assert.NoError(t, checkpoint.Save(ctx, shutProgress{Step: 1}))
			started <- tk.ID
			<-ctx.Done()
			causes <- context.Cause(ctx)
			assert.NoError(t, checkpoint.Save(ctx, shutProgress{Step: 2}))
			return ctx.Err()
		})
		mux.HandleFunc("later", func(_ context.Context, tk *queue.TaskInfo) error {
			laterRan <- tk.ID
			return nil
		})
		var long []string
		for i := 0; i < running; i++ {
			long = append(long, enqueue(t, q, "long", "", 1))
		}
		later := []string{enqueue(t, q, "later", "", 1), enqueue(t, q, "later", "", 1)}
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: running})
		for i := 0; i < running; i++ {
			receive(t, started, "long tasks to start")
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
		require.NoError(t, rt.Shutdown(ctx), "second Shutdown")
		for i := 0; i < running; i++ {
			require.ErrorIs(t, receive(t, causes, "cancellation causes"), handlers.ErrShutdown)
		}
		require.Empty(t, laterRan, "a waiting task ran during shutdown")

		pending, err := store.Of(q).Pending(context.Background(), 1)
		require.NoError(t, err)
		require.Len(t, pending, running+len(later))
		require.ElementsMatch(t, long, pending[:running], "requeued tasks are at the head")
		require.Equal(t, later, pending[running:], "waiting tasks keep their order behind them")
		for _, id := range long {
			tk, err := q.Inspect(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, queue.StatePending, tk.State)
			require.Zero(t, tk.Attempt, "a shutdown is not a failed attempt")
			require.Zero(t, tk.Preemptions, "a shutdown is not a preemption")
			require.JSONEq(t, `{"Step":2}`, string(tk.Checkpoint))
		}

		startRuntime(t, q, mux, runtime.Config{Concurrency: running})
		var got []string
		for i := 0; i < running; i++ {
			r := receive(t, resumed, "resumed runs")
			require.Equal(t, shutProgress{Step: 2}, r.Progress)
			require.Zero(t, r.Attempt)
			require.Zero(t, r.Preemptions)
			got = append(got, r.ID)
		}
		require.ElementsMatch(t, long, got)
		for _, id := range append(slices.Clone(long), later...) {
			waitGone(t, q, id)
		}
	})
}

// With a DrainTimeout, Shutdown lets running tasks finish on their own
// first: one that finishes in time is acked; one still running when the
// drain ends is preempted with handlers.ErrShutdown and requeued.
func TestShutdownDrainTimeout(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const drain = time.Second
		q := setup(t, b, queue.Config{})
		started := make(chan string, 2)
		release := make(chan struct{})
		shortCancelled := make(chan error, 1)
		type cancelled struct {
			cause error
			at    time.Time
		}
		longCancelled := make(chan cancelled, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("short", func(ctx context.Context, tk *queue.TaskInfo) error {
			started <- tk.ID
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				shortCancelled <- context.Cause(ctx)
				return ctx.Err()
			}
		})
		mux.HandleFunc("long", func(ctx context.Context, tk *queue.TaskInfo) error {
			started <- tk.ID
			<-ctx.Done()
			longCancelled <- cancelled{context.Cause(ctx), time.Now()}
			assert.NoError(t, checkpoint.Save(ctx, shutProgress{Step: 1}))
			return ctx.Err()
		})
		short := enqueue(t, q, "short", "", 1)
		long := enqueue(t, q, "long", "", 1)
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2, DrainTimeout: drain})
		receive(t, started, "tasks to start")
		receive(t, started, "tasks to start")

		shutStart := time.Now()
		res := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res <- rt.Shutdown(ctx)
		}()
		// Shutdown has begun once the worker reports no capacity.
		require.Eventually(t, func() bool {
			ws, err := q.Workers(context.Background())
			return err == nil && len(ws) == 1 && ws[0].ID == rt.WorkerID() && ws[0].Capacity == 0
		}, 10*time.Second, 2*time.Millisecond, "worker never reported draining")
		close(release)
		require.NoError(t, receive(t, res, "Shutdown"))

		require.Empty(t, shortCancelled, "the short task was cancelled instead of drained")
		waitGone(t, q, short)
		c := receive(t, longCancelled, "the long task's cancellation")
		require.ErrorIs(t, c.cause, handlers.ErrShutdown)
		require.GreaterOrEqual(t, c.at.Sub(shutStart), drain, "cancelled before the drain ended")
		tk, err := q.Inspect(context.Background(), long)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, tk.State)
		require.Zero(t, tk.Attempt)
		require.JSONEq(t, `{"Step":1}`, string(tk.Checkpoint))
	})
}

// A handler that ignores the shutdown past Shutdown's context: Shutdown
// returns an error naming its task but does NOT requeue it behind its back
// (another worker would run it while it still runs). Its lease is kept and
// extended; another runtime does not run it meanwhile; when the handler
// returns, its late checkpoint counts and the task is requeued and resumed
// from it elsewhere, having run once at a time.
func TestShutdownStuckHandler(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		started := make(chan string, 1)
		release := make(chan struct{})
		lateSave := make(chan error, 1)
		resumed := make(chan shutProgress, 1)
		var runs, running atomic.Int32
		mux := handlers.NewMux()
		mux.HandleFunc("stubborn", func(ctx context.Context, tk *queue.TaskInfo) error {
			assert.EqualValues(t, 1, running.Add(1), "two runs of the task at once")
			defer running.Add(-1)
			p, ok, err := checkpoint.Load[shutProgress](ctx)
			if !assert.NoError(t, err) {
				return err
			}
			if ok && p.Step == 99 {
				resumed <- p
				return nil
			}
			runs.Add(1)
			assert.NoError(t, checkpoint.Save(ctx, shutProgress{Step: 1}))
			started <- tk.ID
			<-release // ignores ctx
			lateSave <- checkpoint.Save(ctx, shutProgress{Step: 99})
			return context.Cause(ctx)
		})
		mux.HandleFunc("after", func(context.Context, *queue.TaskInfo) error { return nil })
		id := enqueue(t, q, "stubborn", "", 2)
		other := enqueue(t, q, "after", "", 2) // waits behind it
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 200 * time.Millisecond})
		require.Equal(t, id, receive(t, started, "the stubborn task"))

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := rt.Shutdown(ctx)
		require.Error(t, err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), id, "the error names the stuck task")
		require.Contains(t, err.Error(), "leases kept")
		tk, ierr := q.Inspect(context.Background(), id)
		require.NoError(t, ierr)
		require.Equal(t, queue.StateActive, tk.State, "not requeued while its handler runs")

		// Another worker takes the other task but not the stuck one, even
		// past several lease durations: the stuck run's lease is extended.
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2, HeartbeatInterval: 200 * time.Millisecond})
		waitGone(t, q, other)
		require.Never(t, func() bool { return runs.Load() > 1 }, 2500*time.Millisecond, 50*time.Millisecond,
			"the task ran again while its first run was stuck")

		// The stuck handler returns: its late save counts (the lease is still
		// its own), and the task is requeued and resumed from it elsewhere.
		close(release)
		require.NoError(t, receive(t, lateSave, "the late save"))
		require.Equal(t, shutProgress{Step: 99}, receive(t, resumed, "the task resumed elsewhere"))
		waitGone(t, q, id)
		require.EqualValues(t, 1, runs.Load())
	})
}

// With Redis unreachable, Shutdown honours its deadline and its error says
// what happened: the requeue failed, the task is recovered when its lease
// expires (not "requeued").
func TestShutdownRedisUnreachable(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	q, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "shut-outage"})
	require.NoError(t, err)
	started := make(chan string, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		<-ctx.Done()
		return context.Cause(ctx)
	})
	id := enqueue(t, q, "job", "", 1)
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1, MaxRedisBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	require.Equal(t, id, receive(t, started, "the job"))
	require.NoError(t, srv.Stop())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	begin := time.Now()
	err = rt.Shutdown(ctx)
	took := time.Since(begin)
	t.Logf("Shutdown(2 s) with Redis down returned after %v: %v", took, err)
	require.Less(t, took, 2500*time.Millisecond, "Shutdown overran its deadline")
	require.Error(t, err)
	require.Contains(t, err.Error(), "could not be requeued")
	require.Contains(t, err.Error(), id)
	require.NotContains(t, err.Error(), "requeued:", "it must not claim the task was requeued")
}
