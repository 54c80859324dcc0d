package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A transition the queue refuses (here: a key of the wrong type, so the
// script fails closed) is reported as refused: a dead letter is counted
// and logged only once stored, "retry scheduled" only when the retry was,
// and corruption is not retried as if Redis were down.
func TestRefusedTransitionsNotReported(t *testing.T) {
	skipOnShards(t, "it corrupts shard 0's keys by hand")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		prefix := "{" + b.Prefix + ":" + q.Name() + "}:"
		ran := make(chan string, 4)
		mux := handlers.NewMux()
		mux.HandleFunc("bad", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return handlers.SkipRetry(errors.New("invalid input"))
		})
		mux.HandleFunc("flaky", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return errors.New("try again")
		})
		// dead and scheduled hold strings: dead letters and retries fail closed.
		require.NoError(t, b.Client.Set(ctx, prefix+"dead", "oops", 0).Err())
		require.NoError(t, b.Client.Set(ctx, prefix+"scheduled", "oops", 0).Err())
		log, logs := observedLogger(t)
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2, Logger: log, MaxRedisBackoff: 20 * time.Millisecond})

		bad := enqueue(t, q, "bad", "", 1)
		require.Equal(t, bad, receive(t, ran, "the bad task's run"))
		waitForLog(t, logs, "the refused dead letter logged as corruption", func(e observer.LoggedEntry) bool {
			return e.Message == "corrupt queue data; the task's dead letter was refused" && e.ContextMap()["task_id"] == bad
		})
		flaky := enqueue(t, q, "flaky", "", 1)
		require.Equal(t, flaky, receive(t, ran, "the flaky task's run"))
		waitForLog(t, logs, "the refused retry logged as corruption", func(e observer.LoggedEntry) bool {
			return e.Message == "corrupt queue data; the task's retry was refused" && e.ContextMap()["task_id"] == flaky
		})

		require.Zero(t, rt.Stats().Dead, "a dead letter that was refused is counted")
		require.Zero(t, logs.FilterMessage("task dead-lettered").Len())
		require.Zero(t, logs.FilterMessage("task failed; retry scheduled").Len())
		for _, e := range logs.All() {
			require.NotContains(t, e.Message, "redis unavailable", "corruption retried as an outage")
		}
	})
}
