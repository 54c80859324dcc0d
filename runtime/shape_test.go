package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
// queue.New nor runtime.New could check its shape) checks before its
// first lease: with another shape stored, it logs the mismatch, naming
// both shapes, and leases nothing, so the task stays pending. Its
// heartbeats are refused too, which it logs once, not every interval.
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
			HeartbeatInterval: 20 * time.Millisecond, StartTimeout: -1}) // Start does not wait for the shape
		require.NoError(t, err, "Redis is down: the check is left to the first lease")

		up()
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 5})
		require.NoError(t, err)
		id := enqueue(t, producer, "job", "", 0)
		require.NoError(t, rt.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = rt.Shutdown(sctx)
		})
		waitForLog(t, logs, "the mismatch logged by the dispatcher", func(e observer.LoggedEntry) bool {
			msg, _ := e.ContextMap()["error"].(string)
			return e.Message == "queue shape differs from this worker's config; backing off" &&
				strings.Contains(msg, `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
		})
		refused := "heartbeat refused: queue shape differs from this worker's config"
		require.Eventually(t, func() bool { return logs.FilterMessage(refused).Len() >= 4 }, 10*time.Second,
			5*time.Millisecond, "heartbeats refused")
		require.Equal(t, 1, logs.FilterMessage(refused).Filter(func(e observer.LoggedEntry) bool {
			return e.Level == zapcore.WarnLevel
		}).Len(), "the refused heartbeat logged at warn once")
		require.Zero(t, logs.FilterMessage("heartbeat failed").Len(), "a refused heartbeat is not a failed one")
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
