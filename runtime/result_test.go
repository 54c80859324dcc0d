package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A handler's result is read back after the task completed, and the
// attempt that succeeded after a retry wrote the one read: the first
// attempt stores a result, then fails; the second stores another.
func TestResultAfterRetry(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{MaxResultBytes: 64, Backoff: func(int) time.Duration { return time.Millisecond }})
		tooLarge := make(chan error, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("report", func(ctx context.Context, tk *queue.TaskInfo) error {
			if tk.Attempt == 0 {
				if err := handlers.SetResult(ctx, []byte("first")); err != nil {
					return handlers.SkipRetry(err)
				}
				return errors.New("upstream timed out")
			}
			tooLarge <- handlers.SetResult(ctx, []byte(strings.Repeat("x", 65)))
			return handlers.SetResult(ctx, []byte(`{"rows":1200}`))
		})
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2})
		id := enqueue(t, q, "report", "", 1)

		err := receive(t, tooLarge, "the second attempt")
		require.ErrorIs(t, err, queue.ErrResultTooLarge)
		require.ErrorContains(t, err, "65 bytes exceed the limit of 64")
		var got *queue.TaskInfo
		require.Eventually(t, func() bool {
			got, err = q.Inspect(context.Background(), id)
			return err == nil && got.State == queue.StateDone
		}, 10*time.Second, 5*time.Millisecond, "the task completes")
		require.Equal(t, `{"rows":1200}`, string(got.Result), "the second attempt's result")
		require.Equal(t, "report", got.Type)
		require.Equal(t, 1, got.Level)
		require.WithinDuration(t, time.Now().Add(24*time.Hour), got.ResultExpiresAt, time.Minute)
	})
}
