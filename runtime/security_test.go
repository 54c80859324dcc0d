package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// The whole protocol (enqueue, wake-up, lease, checkpoint, preemption,
// requeue, ack, heartbeat) works through the README's ACL rule, over TLS:
// the user reaches only its namespace's keys and channels.
func TestRuntimeWithACLOverTLS(t *testing.T) {
	s := testredis.StartSecure(t, "acl")
	rdb := s.Client(t, true)
	q, err := queue.New(rdb, queue.Config{Namespace: "acl"})
	require.NoError(t, err)
	ctx := context.Background()
	started, preempted, done := make(chan string, 4), make(chan string, 4), make(chan string, 4)
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
		n, _, err := checkpoint.Load[int](ctx)
		if err != nil {
			return err
		}
		started <- tk.ID
		if n > 0 {
			done <- tk.ID
			return nil
		}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), handlers.ErrPreempted) {
			return context.Cause(ctx)
		}
		if err := checkpoint.Save(ctx, n+1); err != nil {
			return err
		}
		preempted <- tk.ID
		return context.Cause(ctx)
	})
	mux.HandleFunc("urgent", func(_ context.Context, tk *queue.TaskInfo) error {
		done <- tk.ID
		return nil
	})
	low := enqueue(t, q, "low", "", 0)
	startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
	require.Equal(t, low, receive(t, started, "the low task"))
	urgent := enqueue(t, q, "urgent", "", 2)
	require.Equal(t, low, receive(t, preempted, "the low task to give way"))
	require.Equal(t, urgent, receive(t, done, "the urgent task"))
	require.Equal(t, low, receive(t, started, "the low task to resume"))
	require.Equal(t, low, receive(t, done, "the low task to finish from its checkpoint"))
	waitGone(t, q, low)

	// The same user cannot touch another namespace.
	other, err := queue.New(rdb, queue.Config{Namespace: "elsewhere"})
	require.NoError(t, err)
	_, err = other.Enqueue(ctx, queue.NewTask("x", nil))
	require.ErrorContains(t, err, "NOPERM")
}
