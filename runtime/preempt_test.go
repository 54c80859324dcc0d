package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A saturated worker preempts its low task for an urgent one; the low task
// checkpoints, is requeued and resumes from its checkpoint.
func TestPreemptAndResume(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		type progress struct{ Step int }
		lowStarted := make(chan progress, 4)
		lowCause := make(chan error, 4)
		urgentRan := make(chan string, 1)
		lowDone := make(chan progress, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, _, err := checkpoint.Load[progress](ctx)
			require.NoError(t, err)
			lowStarted <- p
			if p.Step == 0 {
				require.NoError(t, checkpoint.Save(ctx, progress{Step: 5}))
				<-ctx.Done()
				lowCause <- context.Cause(ctx)
				require.NoError(t, checkpoint.Save(ctx, progress{Step: 7}))
				return ctx.Err()
			}
			lowDone <- p
			return nil
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentRan <- tk.ID
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
		lowID := enqueue(t, q, "low", "", 0)
		require.Equal(t, progress{}, receive(t, lowStarted, "low start"))
		urgentID := enqueue(t, q, "urgent", "", 2)
		require.Equal(t, urgentID, receive(t, urgentRan, "urgent run"))
		cause := receive(t, lowCause, "cause")
		require.True(t, errors.Is(cause, handlers.ErrPreempted))
		var pe *handlers.PreemptedError
		require.ErrorAs(t, cause, &pe)
		require.Equal(t, urgentID, pe.ByID)
		require.Equal(t, 2, pe.ByLevel)
		require.Equal(t, progress{Step: 7}, receive(t, lowStarted, "low resume"))
		require.Equal(t, progress{Step: 7}, receive(t, lowDone, "low done"))
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Reserved)
		require.Eventually(t, func() bool {
			_, err := q.Inspect(context.Background(), lowID)
			return errors.Is(err, queue.ErrTaskNotFound)
		}, 5*time.Second, 5*time.Millisecond, "low task acked and deleted")
	})
}
