package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Handlers that ignore cancellation keep their pool workers. Once every
// pool worker is taken, the runtime reserves no more urgent tasks (they
// could not start, and the dispatcher would block): the urgent task stays
// pending for other workers, and runs here once the stuck handlers return.
func TestStuckVictimsFillingThePoolStopPreemption(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		release := make(chan struct{})
		started := make(chan string, 3)
		stuck := func(ctx context.Context, tk *queue.TaskInfo) error {
			started <- tk.Type
			<-release // ignores ctx
			return nil
		}
		mux := handlers.NewMux()
		mux.HandleFunc("l0", stuck)
		mux.HandleFunc("l1", stuck)
		mux.HandleFunc("l2", func(ctx context.Context, tk *queue.TaskInfo) error {
			started <- tk.Type
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, GracePeriod: 50 * time.Millisecond})
		enqueue(t, q, "l0", "", 0)
		require.Equal(t, "l0", receive(t, started, "l0"))
		enqueue(t, q, "l1", "", 1)
		require.Equal(t, "l1", receive(t, started, "l1"))
		require.Eventually(t, func() bool { return rt.Stats().Stuck == 1 }, 10*time.Second, 5*time.Millisecond)
		// The pool (2 × Concurrency) is full of l0 and l1.
		urgent := enqueue(t, q, "l2", "", 2)
		require.Never(t, func() bool { return rt.Stats().Reserved > 1 }, 500*time.Millisecond, 10*time.Millisecond,
			"reserved an urgent task the pool could not start")
		ids, err := store.Of(q).Pending(context.Background(), 2)
		require.NoError(t, err)
		require.Equal(t, []string{urgent}, ids, "the urgent task waits in its list for any worker")
		close(release)
		require.Equal(t, "l2", receive(t, started, "l2 after the stuck handlers returned"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
}
