package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// setup returns a queue client with its own namespace on backend b.
func setup(t *testing.T, b testredis.Backend, cfg queue.Config) *queue.Client {
	t.Helper()
	cfg.Namespace = b.Prefix
	q, err := queue.New(b.Client, cfg)
	require.NoError(t, err)
	return q
}

// startRuntime starts a runtime and shuts it down at cleanup.
func startRuntime(t *testing.T, q *queue.Client, h handlers.Handler, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	rt, err := runtime.New(q, h, cfg)
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

// enqueue enqueues a task of type typ at level and returns its ID.
func enqueue(t *testing.T, q *queue.Client, typ string, payload string, level int, opts ...queue.Option) string {
	t.Helper()
	tk, err := q.Enqueue(context.Background(), queue.NewTask(typ, []byte(payload)), append([]queue.Option{queue.Level(level)}, opts...)...)
	require.NoError(t, err)
	return tk.ID
}

// waitFor receives from ch or fails after a bound.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
