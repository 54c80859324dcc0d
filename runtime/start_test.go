package runtime_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/redisproc"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// downRuntime returns a runtime whose client dials addr, where no Redis
// answers, waiting at most wait at Start. Its client does not retry (New's
// shape check would try for seconds).
func downRuntime(t *testing.T, addr string, wait time.Duration, log *zap.Logger) *runtime.Runtime {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, queue.Config{})
	require.NoError(t, err, "Redis is down: queue.New leaves the check to later")
	rt, err := runtime.New(q, handlers.NewMux(), runtime.Config{Logger: log, StartTimeout: wait,
		MaxRedisBackoff: 20 * time.Millisecond})
	require.NoError(t, err, "Redis is down: New leaves the shape check to Start")
	return rt
}

// requireUnreachable checks that Start (or Run) failed as it must when
// Redis at addr did not answer within wait: ErrRedisUnreachable, naming
// the address, soon after wait, and the runtime is not started.
func requireUnreachable(t *testing.T, rt *runtime.Runtime, err error, addr string, took, wait time.Duration) {
	t.Helper()
	require.ErrorIs(t, err, runtime.ErrRedisUnreachable)
	require.ErrorContains(t, err, addr)
	require.ErrorContains(t, err, "StartTimeout")
	require.GreaterOrEqual(t, took, wait, "gave up before the start wait")
	require.Less(t, took, wait+5*time.Second, "did not give up within the start wait")
	require.ErrorIs(t, rt.Shutdown(context.Background()), runtime.ErrNotStarted)
}

// A worker whose Redis cannot be reached (nothing listens on its
// address) must not run as if all were well: Start, and Run, fail with
// ErrRedisUnreachable naming the address once StartTimeout has passed.
func TestStartRedisUnreachable(t *testing.T) {
	port, err := redisproc.FreePort(false)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	const wait = 300 * time.Millisecond

	rt := downRuntime(t, addr, wait, zap.NewNop())
	begin := time.Now()
	err = rt.Start(context.Background())
	requireUnreachable(t, rt, err, addr, time.Since(begin), wait)

	rt = downRuntime(t, addr, wait, zap.NewNop())
	begin = time.Now()
	err = rt.Run(context.Background())
	requireUnreachable(t, rt, err, addr, time.Since(begin), wait)
}

// The same with a real redis-server that was stopped: its port refuses.
func TestStartRedisStopped(t *testing.T) {
	srv, err := redisproc.Start(redisproc.Options{})
	if err != nil {
		t.Skipf("no redis-server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.Stop())
	const wait = 300 * time.Millisecond
	rt := downRuntime(t, srv.Addr(), wait, zap.NewNop())
	begin := time.Now()
	err = rt.Run(context.Background())
	requireUnreachable(t, rt, err, srv.Addr(), time.Since(begin), wait)

	// Once it is back, a runtime of the same client starts at once.
	require.NoError(t, srv.Restart())
	begin = time.Now()
	require.NoError(t, rt.Start(context.Background()))
	require.Less(t, time.Since(begin), 2*time.Second)
	require.NoError(t, rt.Shutdown(context.Background()))
}

// A Run whose context ends while it waits for Redis (a SIGTERM before
// Redis ever answered) returns an error, not nil: the worker never ran.
func TestRunCancelledBeforeRedis(t *testing.T) {
	port, err := redisproc.FreePort(false)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	log, logs := observedLogger(t)
	rt := downRuntime(t, addr, time.Minute, log)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(ctx) }()
	entry := waitForLog(t, logs, "the wait announced", func(e observer.LoggedEntry) bool {
		return e.Message == "redis does not answer; waiting for it"
	})
	require.Equal(t, addr, entry.ContextMap()["redis"])
	cancel()
	err = receive(t, ran, "Run's return")
	require.ErrorIs(t, err, runtime.ErrRedisUnreachable)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, addr)
}

// A worker started while Redis is down waits for it: when Redis comes up
// within StartTimeout, Start succeeds and the worker runs tasks.
func TestStartWaitsForRedis(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err)
		ran := make(chan string, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return nil
		})
		log, logs := observedLogger(t)
		rt, err := runtime.New(q, mux, runtime.Config{Logger: log, StartTimeout: time.Minute,
			MaxRedisBackoff: 20 * time.Millisecond})
		require.NoError(t, err)
		started := make(chan error, 1)
		go func() { started <- rt.Start(context.Background()) }()
		waitForLog(t, logs, "the wait announced", func(e observer.LoggedEntry) bool {
			msg, _ := e.ContextMap()["error"].(string)
			return e.Message == "redis does not answer; waiting for it" && strings.Contains(msg, testredis.ErrDown.Error())
		})
		select {
		case err := <-started:
			t.Fatalf("Start returned while Redis was down: %v", err)
		default:
		}
		up()
		require.NoError(t, receive(t, started, "Start's return"))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, rt.Shutdown(sctx))
		})
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err)
		id := enqueue(t, producer, "job", "", 0)
		require.Equal(t, id, receive(t, ran, "the task's run"))
	})
}
