package runtime_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A handler that ignores the shutdown and succeeds late, after Shutdown
// returned or in the last 100 ms before its deadline: its lease is still
// held (extended by the heartbeat), so its success is acked then, and the
// task never runs again, although another worker is there to recover it
// had the ack been lost. The runtime then finishes stopping: it leaves the
// fleet.
func TestShutdownLateHandlerAcked(t *testing.T) {
	const budget = 400 * time.Millisecond
	// returnAt is when the handler returns, given Shutdown's deadline (a nil
	// channel: once Shutdown returned).
	for name, returnAt := range map[string]func(deadline time.Time) <-chan time.Time{
		"after Shutdown returned": func(time.Time) <-chan time.Time { return nil },
		"just before the deadline": func(dl time.Time) <-chan time.Time {
			return time.After(time.Until(dl.Add(-50 * time.Millisecond)))
		},
	} {
		t.Run(name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				q := setup(t, b, queue.Config{LeaseDuration: time.Second})
				started := make(chan string, 2)
				returned := make(chan struct{}) // closed once Shutdown returned
				var deadline atomic.Int64
				var runs atomic.Int32
				mux := handlers.NewMux()
				mux.HandleFunc("stubborn", func(ctx context.Context, tk *queue.TaskInfo) error {
					started <- tk.ID
					if runs.Add(1) == 1 {
						<-ctx.Done() // told, and ignores it
						select {
						case <-returnAt(time.Unix(0, deadline.Load())):
						case <-returned:
						}
					}
					return nil
				})
				id := enqueue(t, q, "stubborn", "", 1)
				cfg := runtime.Config{Concurrency: 1, HeartbeatInterval: 200 * time.Millisecond, PollInterval: 50 * time.Millisecond}
				// Its own logger records only: its teardown logs after
				// Shutdown, so it must not write to the test's log.
				first := cfg
				core, logs := observer.New(zapcore.DebugLevel)
				first.Logger = zap.New(core)
				rt := startRuntime(t, q, mux, first)
				require.Equal(t, id, receive(t, started, "the stubborn task"))

				ctx, cancel := context.WithTimeout(context.Background(), budget)
				defer cancel()
				dl, _ := ctx.Deadline()
				deadline.Store(dl.UnixNano())
				err := rt.Shutdown(ctx)
				t.Logf("Shutdown: %v", err)
				close(returned)
				startRuntime(t, q, mux, cfg) // would run the task again if its lease expired

				waitGone(t, q, id)
				require.EqualValues(t, 1, runs.Load(), "the finished task ran again")
				require.Eventually(t, func() bool { return rt.Stats().Processed == 1 }, 10*time.Second, 5*time.Millisecond)
				require.Eventually(t, func() bool {
					ws, err := q.Workers(context.Background())
					return err == nil && !slices.ContainsFunc(ws, func(w queue.WorkerInfo) bool { return w.ID == rt.WorkerID() })
				}, 10*time.Second, 5*time.Millisecond, "the runtime never finished stopping")
				require.Empty(t, started, "the finished task ran again")
				// Its teardown logs last: nothing may log once the test ended.
				waitForLog(t, logs, "the first runtime stopped", func(e observer.LoggedEntry) bool { return e.Message == "runtime stopped" })
			})
		})
	}
}

// A late handler's ack that fails (Redis answers with an error for a
// while, as while it loads its data after a restart) is retried within
// the lease, not abandoned because Shutdown's deadline has passed.
func TestShutdownLateHandlerRetriesItsAck(t *testing.T) {
	b := testredis.Mini(t)
	q := setup(t, b, queue.Config{LeaseDuration: 3 * time.Second})
	core, logs := observer.New(zapcore.DebugLevel)
	started := make(chan string, 2)
	release := make(chan struct{})
	var runs atomic.Int32
	mux := handlers.NewMux()
	mux.HandleFunc("stubborn", func(ctx context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		if runs.Add(1) == 1 {
			<-release // ignores ctx
		}
		return nil
	})
	id := enqueue(t, q, "stubborn", "", 1)
	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 200 * time.Millisecond,
		MaxRedisBackoff: 50 * time.Millisecond, Logger: zap.New(core)}) // records only: it logs after Shutdown
	require.Equal(t, id, receive(t, started, "the stubborn task"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, rt.Shutdown(ctx), context.DeadlineExceeded)

	b.Miniredis.SetError("LOADING Redis is loading the dataset in memory")
	close(release)
	waitForLog(t, logs, "the ack retried", func(e observer.LoggedEntry) bool {
		return e.Message == "redis unavailable; retrying ack"
	})
	b.Miniredis.SetError("")
	waitGone(t, q, id)
	require.EqualValues(t, 1, runs.Load())
	require.EqualValues(t, 1, rt.Stats().Processed)
	// The teardown after the late ack logs last: nothing may log once the
	// test ended.
	waitForLog(t, logs, "the runtime stopped", func(e observer.LoggedEntry) bool { return e.Message == "runtime stopped" })
}

// With Redis unreachable, Shutdown tells the handlers at once: no Redis
// call (the capacity-0 heartbeat, the dispatcher's last calls) comes
// first.
func TestShutdownRedisDownTellsHandlersAtOnce(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	q, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "shut-told"})
	require.NoError(t, err)
	started := make(chan string, 1)
	told := make(chan time.Time, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		<-ctx.Done()
		told <- time.Now()
		return context.Cause(ctx)
	})
	id := enqueue(t, q, "job", "", 1)
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1, MaxRedisBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	require.Equal(t, id, receive(t, started, "the job"))
	require.NoError(t, srv.Stop())

	const budget = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	begin := time.Now()
	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(ctx) }()
	after := receive(t, told, "the handler told to stop").Sub(begin)
	t.Logf("handler told %v after Shutdown(%v) with Redis down", after, budget)
	require.Less(t, after, 500*time.Millisecond, "the handler was told late")
	serr := receive(t, done, "Shutdown")
	t.Logf("Shutdown returned after %v: %v", time.Since(begin), serr)
	require.Error(t, serr)
}
