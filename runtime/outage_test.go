package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"
)

// Redis goes away while tasks run and comes back (same port, append-only
// file): the runtime logs and backs off without crashing or piling up
// goroutines, enqueueing fails within its context instead of hanging, and
// afterwards every task ends done.
//
// Guarantee asserted: no loss and at least once. Every task's handler
// completed at least once and every record ended acked; a task runs twice
// only if its lease expired during the outage (the lease here is 3 s, so a
// short outage normally gives exactly once; duplicates are logged, not
// failed).
func TestRedisOutageMidRun(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{Persistent: true})
	const ns, total, held = "outage", 40, 4
	newQueue := func() *queue.Client {
		q, err := queue.New(srv.NewClient(t), queue.Config{Namespace: ns, LeaseDuration: 3 * time.Second})
		require.NoError(t, err)
		return q
	}
	q, producer := newQueue(), newQueue()
	log, logs := observedLogger(t)

	var mu sync.Mutex
	completed := map[string]int{}
	var startedN atomic.Int32
	heldStarted := make(chan string, held)
	resume := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
		if startedN.Add(1) <= held {
			heldStarted <- tk.ID
			<-resume // returns during the outage: its ack must wait for Redis
		}
		mu.Lock()
		completed[tk.ID]++
		mu.Unlock()
		return nil
	})
	tasks := make([]*queue.Task, total)
	for i := range tasks {
		tasks[i] = queue.NewTask("job", []byte(fmt.Sprint(i)))
	}
	out, err := producer.EnqueueBatch(context.Background(), tasks, queue.Level(1))
	require.NoError(t, err)
	ids := make([]string, 0, total+1)
	for _, tk := range out {
		ids = append(ids, tk.ID)
	}

	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: held, HeartbeatInterval: 500 * time.Millisecond,
		MaxRedisBackoff: 200 * time.Millisecond, Logger: log})
	for i := 0; i < held; i++ {
		receive(t, heldStarted, "handlers to start")
	}
	baseline := goruntime.NumGoroutine()

	require.NoError(t, srv.Stop())
	close(resume)

	// Enqueue fails within its context rather than hanging.
	enqErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := producer.Enqueue(ctx, queue.NewTask("job", nil), queue.Level(1))
		enqErr <- err
	}()
	require.Error(t, receive(t, enqErr, "Enqueue during the outage to return"))

	// The runtime notices, logs and backs off: the dispatcher and the acks
	// of the handlers that returned both retry.
	dispatcherRetries := func() int {
		return logs.FilterMessage("redis unavailable; backing off").Len()
	}
	require.Eventually(t, func() bool { return dispatcherRetries() >= 3 }, 10*time.Second, 5*time.Millisecond,
		"the dispatcher did not keep retrying")
	waitForLog(t, logs, "an ack retried", func(e observer.LoggedEntry) bool {
		return e.Message == "redis unavailable; retrying ack"
	})
	require.LessOrEqual(t, goruntime.NumGoroutine(), baseline+20, "goroutines pile up during the outage")

	require.NoError(t, srv.Restart())
	tk, err := producer.Enqueue(context.Background(), queue.NewTask("job", nil), queue.Level(1))
	require.NoError(t, err, "Enqueue after the restart")
	ids = append(ids, tk.ID)
	for _, id := range ids {
		waitGone(t, q, id)
	}
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	for _, l := range st.Levels {
		require.Zero(t, l.Pending+l.Active+l.Scheduled+l.Dead, "level %d: %+v", l.Level, l)
	}
	mu.Lock()
	require.Len(t, completed, total+1, "tasks whose handler never completed")
	for id, n := range completed {
		if n > 1 {
			t.Logf("task %s ran %d times (its lease expired during the outage)", id, n)
		}
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx), "shutdown after the outage")
	// go-redis retries failed dials in a goroutine that sleeps a second
	// between attempts; let it see the server back up, so that the leak
	// check at the end of the run does not catch it asleep.
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:goruntime.Stack(buf, true)]), "ConnPool).tryDial")
	}, 10*time.Second, 20*time.Millisecond, "go-redis never redialled")
}
