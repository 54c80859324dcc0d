package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A unique task's lock is released once the runtime acks it, so an equal
// task may be enqueued at once; a dead-lettered one keeps it until its ttl
// ends.
func TestUniqueReleasedOnSuccess(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		mux := handlers.NewMux()
		mux.HandleFunc("ok", func(context.Context, *queue.TaskInfo) error { return nil })
		mux.HandleFunc("bad", func(context.Context, *queue.TaskInfo) error { return errors.New("boom") })
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2})
		ctx := context.Background()
		enqueue(t, q, "ok", "p", 1, queue.Unique(time.Hour))
		enqueue(t, q, "bad", "p", 1, queue.Unique(time.Hour), queue.MaxRetries(0))
		require.Eventually(t, func() bool {
			s := rt.Stats()
			return s.Processed == 2 && s.Dead == 1
		}, 10*time.Second, 5*time.Millisecond)
		require.Eventually(t, func() bool {
			_, err := q.Enqueue(ctx, queue.NewTask("ok", []byte("p")), queue.Unique(time.Hour))
			return err == nil
		}, 10*time.Second, 5*time.Millisecond, "the succeeded task's lock is released")
		_, err := q.Enqueue(ctx, queue.NewTask("bad", []byte("p")), queue.Unique(time.Hour))
		require.ErrorIs(t, err, queue.ErrDuplicateTask, "the dead task keeps its lock")
	})
}
