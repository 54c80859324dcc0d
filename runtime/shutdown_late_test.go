package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

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
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.Task) error {
		started <- tk.ID
		<-ctx.Done()
		told <- time.Now()
		return context.Cause(ctx)
	})
	id := enqueue(t, q, "job", "", 1)
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1, MaxRedisBackoff: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	require.Equal(t, id, waitFor(t, started, "the job"))
	require.NoError(t, srv.Stop())

	const budget = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	begin := time.Now()
	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(ctx) }()
	after := waitFor(t, told, "the handler told to stop").Sub(begin)
	t.Logf("handler told %v after Shutdown(%v) with Redis down", after, budget)
	require.Less(t, after, 500*time.Millisecond, "the handler was told late")
	serr := waitFor(t, done, "Shutdown")
	t.Logf("Shutdown returned after %v: %v", time.Since(begin), serr)
	require.Error(t, serr)
}
