package runtime_test

import (
	"context"
	"strings"
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

// A worker whose levels disagree with the queue's stored shape would lease
// in the wrong order: runtime.New refuses it with ErrShapeMismatch, even
// for a queue client made while Redis was down (whose queue.New could not
// check), and accepts one whose shape matches. A client that passed the
// check is not checked again.
func TestNewShapeMismatch(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix}) // 3 levels, unchecked
		require.NoError(t, err)

		up()
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 5})
		require.NoError(t, err)

		_, err = runtime.New(q, handlers.NewMux(), runtime.Config{})
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		require.Contains(t, err.Error(), `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
		_, err = runtime.New(producer, handlers.NewMux(), runtime.Config{})
		require.NoError(t, err)

		// producer passed the check at queue.New: runtime.New does not ask
		// Redis again (a shape changed since is not seen).
		require.NoError(t, b.Client.Set(ctx, "{"+b.Prefix+":default}:shape", `{"schema":2,"levels":["a","b"]}`, 0).Err())
		_, err = runtime.New(producer, handlers.NewMux(), runtime.Config{})
		require.NoError(t, err, "checked again")
	})
}

// A worker whose queue client was made while Redis was down (so neither
// queue.New nor runtime.New could check its shape) finds the mismatch at
// Start, whose first heartbeat checks it: Start, and Run, fail at once
// with ErrShapeMismatch naming both shapes and the fix, whatever
// StartTimeout, and nothing runs.
func TestStartShapeMismatch(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix}) // 3 levels, unchecked
		require.NoError(t, err)
		ran := make(chan string, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return nil
		})
		rt, err := runtime.New(q, mux, runtime.Config{Logger: zap.NewNop()})
		require.NoError(t, err, "Redis is down: the check is left to Start")

		up()
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 5})
		require.NoError(t, err)
		id := enqueue(t, producer, "job", "", 0)
		for _, start := range []func(context.Context) error{rt.Start, rt.Run} {
			begin := time.Now()
			err = start(ctx)
			require.ErrorIs(t, err, queue.ErrShapeMismatch)
			require.NotErrorIs(t, err, runtime.ErrRedisUnreachable)
			require.ErrorContains(t, err, `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
			require.ErrorContains(t, err, "Give this process the stored Levels, LevelNames, Classes and Shards")
			require.Less(t, time.Since(begin), 5*time.Second, "did not fail at once")
			require.ErrorIs(t, rt.Shutdown(ctx), runtime.ErrNotStarted)
		}
		select {
		case got := <-ran:
			t.Fatalf("a worker of another shape ran task %s", got)
		default:
		}
		info, err := producer.Inspect(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, info.State)
	})
}

// A worker that also started while Redis was down (StartTimeout negative:
// Start does not wait) checks the shape before its first lease: with
// another shape stored, it logs the mismatch once, naming both shapes,
// leases nothing and stops, and Run returns the error (it logged it
// every backoff before, 21 lines in 3 s). The task stays pending, and the
// heartbeats refused meanwhile are not logged as failures.
func TestWorkerShapeCheckedOnFirstLease(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix}) // 3 levels, unchecked
		require.NoError(t, err)
		ran := make(chan string, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return nil
		})
		log, logs := observedLogger(t)
		rt, err := runtime.New(q, mux, runtime.Config{Logger: log, MaxRedisBackoff: 50 * time.Millisecond,
			HeartbeatInterval: 20 * time.Millisecond, StartTimeout: -1})
		require.NoError(t, err, "Redis is down: the check is left to the first lease")

		// The producer's client reaches Redis: the 5 levels are stored
		// before the worker's can be.
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 5})
		require.NoError(t, err)
		id := enqueue(t, producer, "job", "", 0)
		stopped := make(chan error, 1)
		go func() { stopped <- rt.Run(ctx) }()
		waitForLog(t, logs, "Start without Redis", func(e observer.LoggedEntry) bool {
			return e.Message == "first heartbeat failed; will retry"
		})
		up()
		err = receive(t, stopped, "Run's return")
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		require.ErrorContains(t, err, `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
		require.ErrorContains(t, err, "delete the shape key")
		stopping := logs.FilterMessage("queue shape differs from this worker's config; stopping")
		require.Equal(t, 1, stopping.Len(), "the mismatch logged once")
		msg, _ := stopping.All()[0].ContextMap()["error"].(string)
		require.Contains(t, msg, `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
		refused := "heartbeat refused: queue shape differs from this worker's config"
		require.LessOrEqual(t, logs.FilterMessage(refused).Filter(func(e observer.LoggedEntry) bool {
			return e.Level == zapcore.WarnLevel
		}).Len(), 1, "the refused heartbeat logged at warn at most once")
		// (A beat cut short by the shutdown is logged as failed, with
		// context.Canceled: not a refusal.)
		require.Zero(t, logs.FilterMessage("heartbeat failed").Filter(func(e observer.LoggedEntry) bool {
			msg, _ := e.ContextMap()["error"].(string)
			return strings.Contains(msg, queue.ErrShapeMismatch.Error())
		}).Len(), "a refused heartbeat is not a failed one")
		select {
		case got := <-ran:
			t.Fatalf("a worker of another shape ran task %s", got)
		default:
		}
		info, err := producer.Inspect(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, info.State)
	})
}
