package runtime_test

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// What a producer's Enqueue and a worker's run of a no-op task allocate,
// counted: a count, not a time, so the guard holds on a loaded machine.
// Both are measured against a real redis-server, a process of its own
// (miniredis would run in this one and count its own allocations), and
// count every allocation of this process meanwhile: go-redis, the group
// commit's goroutine, the dispatcher, the pool and the completer
// included, but not the test's own waits (one signal for the whole
// drain). One Enqueue at a time (a group commit of one) counts 20, every
// run (29 before a caller's lone call went under its own context, with no
// context or timer of the group's; 23 before the group recycled its waits
// and kept its queue's array, and Level's Options were made once); a drain at Concurrency 16 counts 35.9 to 36.8 a task (how the
// lease calls batch moves it by about one), 31.9 to 32.7 in a race build.
// It counted 49.2 to 50.2 before a run kept its context values, its
// checkpoint Handle and its metrics' context in itself (runctx.go) and
// stopped building log fields and span attributes nobody keeps.
// The ceilings are those counts, the drain's with a margin of 3; a change
// that allocates more must raise them, and say why in its commit.
const (
	maxAllocsPerEnqueue = 20
	maxAllocsPerTask    = 40
)

func TestAllocsPerEnqueue(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	q, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "allocs-enqueue"})
	require.NoError(t, err)
	ctx := context.Background()
	task := queue.NewTask("noop", nil)
	n := testing.AllocsPerRun(2000, func() {
		if _, err := q.Enqueue(ctx, task); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per Enqueue", n)
	require.LessOrEqual(t, n, float64(maxAllocsPerEnqueue+raceAllocs))
}

func TestAllocsPerProcessedTask(t *testing.T) {
	const tasks = 5000
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	q, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "allocs-task"})
	require.NoError(t, err)
	ctx := context.Background()
	batch := make([]*queue.Task, 1000)
	for i := range batch {
		batch[i] = queue.NewTask("noop", nil)
	}
	for range tasks / len(batch) {
		_, err := q.EnqueueBatch(ctx, batch)
		require.NoError(t, err)
	}
	// One signal once every task ran: a wait per task (receive's timer)
	// would count three allocations of this test's own per task.
	var ran atomic.Int64
	done := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("noop", func(context.Context, *queue.TaskInfo) error {
		if ran.Add(1) == tasks {
			close(done)
		}
		return nil
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 16, Logger: zap.NewNop()})
	require.NoError(t, err)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	receive(t, done, "every task")
	require.Eventually(t, func() bool { return rt.Stats().Processed == tasks }, 10*time.Second, time.Millisecond)
	goruntime.ReadMemStats(&after)
	n := float64(after.Mallocs-before.Mallocs) / tasks
	t.Logf("%.1f allocations per processed task (start-up included)", n)
	require.LessOrEqual(t, n, float64(maxAllocsPerTask+raceAllocs))
}
